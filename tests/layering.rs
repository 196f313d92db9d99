//! The layering rule, checked on the source: only the command-line layer
//! (`src/cli/`, `src/main.rs`) reads flags, prints or chooses an exit
//! status; no library module imports it. A library enum may derive
//! `clap::ValueEnum` (that names its values for the command line without
//! reading any), but nothing below `cli` parses arguments.
//!
//! Test modules (`#[cfg(test)]`, last in each file) may print; the scan
//! stops at the first one.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// What a library file must not contain, and why.
const FORBIDDEN: &[(&str, &str)] = &[
    ("crate::cli", "imports the command-line layer"),
    ("goodput::cli", "imports the command-line layer"),
    ("process::exit", "chooses an exit status"),
    ("println!", "prints"),
    ("eprintln!", "prints"),
    ("print!(", "prints"),
    ("eprint!(", "prints"),
    ("io::stdout", "writes to standard output"),
    ("io::stderr", "writes to standard error"),
    ("env::args", "reads the command line"),
    ("clap::Parser", "parses arguments"),
    ("clap::Args", "parses arguments"),
    ("clap::Command", "parses arguments"),
    ("ArgMatches", "parses arguments"),
];

#[test]
fn no_library_module_reaches_up_into_the_command_line() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files.sort();
    let library: Vec<&PathBuf> = files
        .iter()
        .filter(|p| {
            let rel = p.strip_prefix(&root).expect("under src");
            !rel.starts_with("cli") && rel != Path::new("main.rs")
        })
        .collect();
    assert!(
        library.len() > 50,
        "found only {} library files",
        library.len()
    );
    let mut offences = Vec::new();
    for path in library {
        let text = std::fs::read_to_string(path).expect("read source");
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("#[cfg(test)]") {
                break;
            }
            let code = line.split("//").next().unwrap_or("");
            for (needle, why) in FORBIDDEN {
                if code.contains(needle) {
                    offences.push(format!(
                        "{}:{}: {why}: {}",
                        path.display(),
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "library code reaching up:\n{}",
        offences.join("\n")
    );
}

#[test]
fn the_scan_would_catch_a_library_file_that_prints() {
    // The checker itself must be able to fail: a line like the ones it looks
    // for is caught, and the same line in a comment or after the test
    // module's start is not.
    let caught = |line: &str| {
        let code = line.split("//").next().unwrap_or("");
        FORBIDDEN.iter().any(|(needle, _)| code.contains(needle))
    };
    assert!(caught("    println!(\"{x}\");"));
    assert!(caught("use crate::cli::exit::EXIT_OK;"));
    assert!(caught("    std::process::exit(2);"));
    assert!(!caught("// println! is for the cli layer"));
    assert!(!caught("#[derive(Clone, Copy, clap::ValueEnum)]"));
}
