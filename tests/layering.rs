//! The layering rules, checked on the workspace itself.
//!
//! 1. The crates are the layers (docs/architecture.md): each library crate
//!    may depend only on the crates below it in [`FLOORS`], so an import that
//!    runs back up is a compile error. This test holds the manifests to that
//!    order, keeps the core free of an async runtime, HTTP, TLS and the
//!    tokenizer, and keeps clap in the command-line crate alone.
//! 2. Only the command-line layer (`src/`) reads flags, prints or chooses an
//!    exit status: no library file (`crates/*/src/`) does any of that.
//!
//! Test modules (`#[cfg(test)]`, last in each file) may print; the scan
//! stops at the first one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The library crates from the ground floor up. A crate may depend on a
/// crate of a lower floor only (two crates on one floor know nothing of
/// each other).
const FLOORS: &[&[&str]] = &[
    &["goodput-util"],
    &["goodput-core", "goodput-tokenizer"],
    &["goodput-import", "goodput-sim", "goodput-record"],
    &["goodput-render"],
    &["goodput-selfcheck"],
];

/// Dependencies the core must not have: it builds and tests alone, fast,
/// with no runtime, network, TLS or tokenizer underneath.
const NOT_IN_CORE: &[&str] = &[
    "tokio",
    "hyper",
    "hyper-util",
    "http-body-util",
    "rustls",
    "tokio-rustls",
    "tokenizers",
    "goodput-tokenizer",
    "clap",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn floor_of(name: &str) -> Option<usize> {
    FLOORS.iter().position(|floor| floor.contains(&name))
}

/// The `[dependencies]` names of a manifest (not dev-dependencies: a test
/// may use a crate above, as the command line's tests use all of them).
fn dependencies(manifest: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut inside = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == "[dependencies]";
            continue;
        }
        if inside && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['.', '=', ' ']).next().unwrap_or("");
            names.push(name.to_owned());
        }
    }
    names
}

fn library_manifests() -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(root().join("crates")).expect("read crates/") {
        let dir = entry.expect("dir entry").path();
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).expect("read manifest");
        let name = manifest
            .lines()
            .find_map(|l| l.strip_prefix("name = "))
            .expect("a package name")
            .trim_matches('"')
            .to_owned();
        out.insert(name, dependencies(&manifest));
    }
    out
}

/// Every offence of the dependency rules in `manifests`.
fn dependency_offences(manifests: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    let mut offences = Vec::new();
    for (name, deps) in manifests {
        let Some(floor) = floor_of(name) else {
            offences.push(format!("{name} is on no floor of FLOORS"));
            continue;
        };
        for dep in deps {
            if dep == "clap" {
                offences.push(format!(
                    "{name} depends on clap (only the command line may)"
                ));
            }
            if name == "goodput-core" && NOT_IN_CORE.contains(&dep.as_str()) {
                offences.push(format!("goodput-core depends on {dep}"));
            }
            if let Some(dep_floor) = floor_of(dep) {
                if dep_floor >= floor {
                    offences.push(format!(
                        "{name} (floor {floor}) depends on {dep} (floor {dep_floor}): arrows point down"
                    ));
                }
            } else if dep.starts_with("goodput") {
                offences.push(format!(
                    "{name} depends on {dep}, which is not a library crate"
                ));
            }
        }
    }
    offences
}

#[test]
fn every_crate_depends_only_on_the_floors_below_it() {
    let manifests = library_manifests();
    assert_eq!(manifests.len(), 8, "{:?}", manifests.keys());
    let offences = dependency_offences(&manifests);
    assert!(offences.is_empty(), "{}", offences.join("\n"));
}

#[test]
fn the_dependency_check_would_catch_an_arrow_up_clap_below_and_a_runtime_in_core() {
    let mut manifests = BTreeMap::new();
    manifests.insert("goodput-core".to_owned(), vec!["goodput-render".to_owned()]);
    manifests.insert("goodput-import".to_owned(), vec!["clap".to_owned()]);
    manifests.insert("goodput-util".to_owned(), vec!["serde".to_owned()]);
    let mut with_tokio = manifests.clone();
    with_tokio.insert("goodput-core".to_owned(), vec!["tokio".to_owned()]);
    let offences = dependency_offences(&manifests);
    assert_eq!(offences.len(), 2, "{offences:?}");
    assert!(offences[0].contains("goodput-core (floor 1) depends on goodput-render (floor 3)"));
    assert!(offences[1].contains("goodput-import depends on clap"));
    assert_eq!(dependency_offences(&with_tokio).len(), 2);
    assert_eq!(
        dependencies("[dependencies]\nserde.workspace = true\ntokio = \"1\"\n\n[dev-dependencies]\nclap = \"4\"\n"),
        ["serde", "tokio"]
    );
}

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
    ("goodput::", "imports the command-line crate"),
    ("process::exit", "chooses an exit status"),
    ("println!", "prints"),
    ("eprintln!", "prints"),
    ("print!(", "prints"),
    ("eprint!(", "prints"),
    ("io::stdout", "writes to standard output"),
    ("io::stderr", "writes to standard error"),
    ("env::args", "reads the command line"),
    ("clap::", "parses arguments"),
    ("ArgMatches", "parses arguments"),
    (
        "Usage(",
        "calls a failure a usage error (the command line decides that)",
    ),
];

#[test]
fn no_library_crate_reaches_up_into_the_command_line() {
    let mut files = Vec::new();
    rust_files(&root().join("crates"), &mut files);
    files.sort();
    assert!(
        files.len() > 100,
        "found only {} library files",
        files.len()
    );
    let mut offences = Vec::new();
    for path in &files {
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
    // for is caught, and the same line in a comment is not.
    let caught = |line: &str| {
        let code = line.split("//").next().unwrap_or("");
        FORBIDDEN.iter().any(|(needle, _)| code.contains(needle))
    };
    assert!(caught("    println!(\"{x}\");"));
    assert!(caught("use goodput::cli::exit::EXIT_OK;"));
    assert!(caught("    std::process::exit(2);"));
    assert!(caught("#[derive(Clone, Copy, clap::ValueEnum)]"));
    assert!(caught("    .map_err(|e| Error::Usage(e.to_string()))"));
    assert!(!caught("// println! is for the cli layer"));
    assert!(!caught("use goodput_core::trace::Trace;"));
}
