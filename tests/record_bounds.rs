//! Every length flag of `record` has an upper bound, and every input file
//! it reads has a byte limit: above either, a one-line refusal naming the
//! flag (or the file) and the bound, exit 2, before anything is sent
//! (before, `--random-input-len 1000000000` aborted on a 6 GB allocation,
//! exit 134, and `--prompts /dev/zero` read without bound).

use std::process::Command;

/// Runs `goodput record` against a port nothing listens on (nothing is
/// ever sent: every refusal here comes first) at 1/s for 1 s, unless
/// `extra` brings its own load (`--replay`); returns (status, stderr).
fn record(extra: &[&str]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let load: &[&str] = if extra.contains(&"--replay") {
        &[]
    } else {
        &["--request-rate", "1", "--duration", "1s"]
    };
    let out = Command::new(env!("CARGO_BIN_EXE_goodput"))
        .args([
            "record",
            "--url",
            "http://127.0.0.1:9/v1/completions",
            "--model",
            "sim",
        ])
        .args(["--no-progress", "--no-preflight"])
        .args(load)
        .args(extra)
        .arg("--out")
        .arg(dir.path().join("t.json"))
        .output()
        .expect("run goodput");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn each_length_flag_one_above_its_bound_is_refused_naming_flag_and_bound() {
    for (flag, above, bound) in [
        ("--random-input-len", "1000001", "1000000"),
        ("--max-tokens", "1000001", "1000000"),
        ("--prefix-tokens", "1000001", "1000000"),
        ("--input-tokens", "1000001", "1000000"),
        ("--output-tokens", "1000001", "1000000"),
        ("--random-input-len", "1000000000", "1000000"),
        ("--prefix-tokens", "99999999999", "1000000"),
    ] {
        let (code, stderr) = record(&[flag, above]);
        assert_eq!(code, Some(2), "{flag} {above}: {stderr}");
        assert!(
            stderr.contains(flag) && stderr.contains(bound),
            "{flag}: {stderr}"
        );
    }
    let (code, stderr) = record(&["--prefix-tokens", "8", "--prefix-groups", "10001"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("10001 is above the bound of 10000 for --prefix-groups"),
        "{stderr}"
    );
    let (code, stderr) = record(&["--random-input-len", "1000001"]);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("1000001 is above the bound of 1000000 for --random-input-len"),
        "{stderr}"
    );
}

/// A sparse file of `size` bytes (no disk used, nothing to read).
fn sparse(dir: &std::path::Path, name: &str, size: u64) -> String {
    let path = dir.join(name);
    std::fs::File::create(&path).unwrap().set_len(size).unwrap();
    path.display().to_string()
}

#[test]
fn an_input_file_over_its_limit_is_refused_from_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let big = sparse(dir.path(), "big.jsonl", (256 << 20) + 1);
    let huge = sparse(dir.path(), "huge.json", (1 << 30) + 1);
    for (extra, flag, path, limit) in [
        (
            ["--prompts", big.as_str()].as_slice(),
            "--prompts",
            &big,
            "268435456",
        ),
        (
            &["--replay", "mooncake", big.as_str()],
            "--replay",
            &big,
            "268435456",
        ),
        (
            &["--dataset", "sharegpt", huge.as_str()],
            "--dataset",
            &huge,
            "1073741824",
        ),
    ] {
        let (code, stderr) = record(extra);
        assert_eq!(code, Some(2), "{extra:?}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "{path} is larger than {limit} bytes, the limit on a {flag} file"
            )),
            "{extra:?}: {stderr}"
        );
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
    let tok = sparse(dir.path(), "tokenizer.json", (256 << 20) + 1);
    let (code, stderr) = record(&["--tokenizer", tok.as_str()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{tok} is larger than 268435456 bytes, the limit on a tokenizer.json"
        )),
        "{stderr}"
    );
}
