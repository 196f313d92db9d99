//! Where `--out` may write: a regular file or a new
//! path atomically, a symbolic link to a regular file written through;
//! a FIFO, a socket, a directory refused; and never over one of the
//! command's own inputs. Every refusal is exit 2 before any work, and the
//! refused path is left exactly as it was.

mod common;

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use clap::Parser;
use common::goodput;
use goodput::cli::{Cli, Command as Sub};
use goodput_record::output::spool;

fn run(args: &[&str]) -> Output {
    goodput().args(args).output().expect("spawn goodput")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const TRACE: &str = r#"{"schema":"goodput-trace/1","window":{"startMs":0,"endMs":10000},
 "equality":"inclusive","classes":{"chat":{"ttftMs":500,"tpotMs":50,"e2eMs":5000}},
 "rows":[{"id":"a","arrivalMs":1000,"status":"completed","firstTokenMs":1250,"completedMs":2250,"outputTokens":11}]}"#;

fn trace(dir: &Path) -> PathBuf {
    let path = dir.join("t.json");
    std::fs::write(&path, TRACE).unwrap();
    path
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn fifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}

fn is_fifo(path: &Path) -> bool {
    std::fs::symlink_metadata(path)
        .unwrap()
        .file_type()
        .is_fifo()
}

#[test]
fn analyze_refuses_to_write_its_receipt_over_its_own_trace() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    // The same file by its name, by another spelling, and by a hard link.
    let hard = dir.path().join("hard.json");
    std::fs::hard_link(&t, &hard).unwrap();
    let other = dir.path().join(".").join("t.json");
    for out in [&t, &other, &hard] {
        let o = run(&["analyze", &s(&t), "--out", &s(out)]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert_eq!(
            stderr(&o),
            format!(
                "--out {} is the input {}: goodput does not overwrite its own input\n",
                s(out),
                s(&t)
            )
        );
        assert!(o.stdout.is_empty());
        assert_eq!(std::fs::read_to_string(&t).unwrap(), TRACE);
    }
}

#[test]
fn every_command_with_an_input_refuses_it_as_its_output() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let t = s(&t);
    let cases: [&[&str]; 5] = [
        &["sweep", &t, "--out", &t],
        &["report", &t, "--out", &t],
        &["import", "--from", "vllm", &t, "--out", &t],
        &["merge", &t, "--out", &t],
        &["frontier", &t, "--svg", &t],
    ];
    for args in cases {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let flag = if args[0] == "frontier" {
            "--svg"
        } else {
            "--out"
        };
        assert_eq!(
            stderr(&o),
            format!("{flag} {t} is the input {t}: goodput does not overwrite its own input\n"),
            "{args:?}"
        );
        assert_eq!(std::fs::read_to_string(&t).unwrap(), TRACE, "{args:?}");
    }
}

/// A spool as a recorder writes it before its first request: a real plan's
/// header (constant 10/s for 0.5 s), nothing after it.
fn header_only_spool(dir: &Path) -> PathBuf {
    let argv = [
        "goodput",
        "record",
        "--url",
        "http://127.0.0.1:9",
        "--model",
        "sim",
        "--out",
        &s(&dir.join("dead.json")),
        "--request-rate",
        "10",
        "--arrival",
        "constant",
        "--duration",
        "0.5s",
    ];
    let Sub::Record(args) = Cli::try_parse_from(argv).unwrap().command else {
        panic!("not record")
    };
    let plan = goodput::cli::record::plan::plan(&args).expect("a valid plan");
    let path = dir.join("dead.json.spool");
    let text = serde_json::to_string(&spool::header(&plan)).unwrap() + "\n";
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn recovering_a_spool_into_itself_is_refused_and_the_spool_kept() {
    let dir = tempfile::tempdir().unwrap();
    let spool_file = header_only_spool(dir.path());
    let before = std::fs::read(&spool_file).unwrap();
    let sp = s(&spool_file);
    let o = run(&["record", "--recover", &sp, "--out", &sp]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!("--out {sp} is the input {sp}: goodput does not overwrite its own input\n")
    );
    assert!(
        o.stdout.is_empty(),
        "nothing claims the spool was left alone"
    );
    assert_eq!(std::fs::read(&spool_file).unwrap(), before);
    // The spool still recovers where it should.
    let out = dir.path().join("dead.json");
    let o = run(&["record", "--recover", &sp, "--out", &s(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read(&spool_file).unwrap(), before);
}

#[test]
fn a_fifo_is_refused_without_being_opened_or_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let pipe = dir.path().join("pipe");
    fifo(&pipe);
    // Nobody reads the FIFO: opening it for writing would block this test.
    for args in [
        vec!["analyze".to_owned(), s(&t), "--out".into(), s(&pipe)],
        vec!["report".to_owned(), s(&t), "--out".into(), s(&pipe)],
    ] {
        let o = goodput().args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert_eq!(
            stderr(&o),
            format!(
                "--out {} is a FIFO (named pipe), not a regular file: goodput writes only regular files\n",
                s(&pipe)
            )
        );
        assert!(is_fifo(&pipe), "{args:?} replaced the FIFO");
    }
}

#[test]
fn the_recorder_refuses_a_fifo_as_its_trace_or_its_spool_before_sending() {
    let dir = tempfile::tempdir().unwrap();
    let record = |out: &Path| {
        run(&[
            "record",
            "--url",
            "http://127.0.0.1:9",
            "--model",
            "sim",
            "--no-preflight",
            "--request-rate",
            "1",
            "--duration",
            "0.1s",
            "--out",
            &s(out),
        ])
    };
    let pipe = dir.path().join("pipe.json");
    fifo(&pipe);
    let o = record(&pipe);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!(
            "--out {} is a FIFO (named pipe), not a regular file: goodput writes only regular files\n",
            s(&pipe)
        )
    );
    assert!(is_fifo(&pipe));
    let out = dir.path().join("t.json");
    let spool_fifo = dir.path().join("t.json.spool");
    fifo(&spool_fifo);
    let o = record(&out);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!(
            "the spool {} is a FIFO (named pipe), not a regular file: goodput writes only regular files\n",
            s(&spool_fifo)
        )
    );
    assert!(is_fifo(&spool_fifo));
    assert!(!out.exists());
}

#[test]
fn a_link_to_a_regular_file_is_written_through_and_stays_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let real = dir.path().join("real.json");
    std::fs::write(&real, "old receipt").unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let o = run(&["analyze", &s(&t), "--out", &s(&link)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let json = run(&["analyze", &s(&t), "--json"]);
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_link(&link).unwrap(), real);
    assert_eq!(std::fs::read(&real).unwrap(), json.stdout);
    // A link to the input is the input.
    let to_input = dir.path().join("to-input.json");
    std::os::unix::fs::symlink(&t, &to_input).unwrap();
    let o = run(&["analyze", &s(&t), "--out", &s(&to_input)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&t).unwrap(), TRACE);
}

#[test]
fn a_directory_or_a_socket_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let sock = dir.path().join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    for (path, kind) in [(&sub, "a directory"), (&sock, "a socket")] {
        let o = run(&["sweep", &s(&t), "--out", &s(path)]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert_eq!(
            stderr(&o),
            format!(
                "--out {} is {kind}, not a regular file: goodput writes only regular files\n",
                s(path)
            )
        );
        assert!(o.stdout.is_empty(), "refused before any work");
    }
    assert_eq!(std::fs::read_dir(&sub).unwrap().count(), 0);
    assert!(std::fs::symlink_metadata(&sock)
        .unwrap()
        .file_type()
        .is_socket());
}
