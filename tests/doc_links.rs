//! The documentation and the help texts point only at things a person who
//! cloned the repository has.
//!
//! Scanned: `README.md`, every `docs/*.md`, `CHANGELOG.md`, and the `--help`
//! of the binary's top-level command and of every subcommand (the list is
//! read from the top-level help's `Commands:` section, recursively).
//!
//! The rules, for every line of every text:
//!
//! 1. **Nothing outside the repository or its history of issues**: no
//!    `../shared`, no `SPEC` as a word (`SPEC.md`, `SPEC §6`, "the SPEC"),
//!    no `issue N` / `issue #N` / `issues N` (any case).
//! 2. **Markdown links** `[text](target)` whose target is not a URL
//!    (`scheme://`, `mailto:`) or a bare `#anchor` must name a file or folder
//!    that exists, relative to the document that holds the link (the
//!    `#anchor` part is ignored).
//! 3. **Repository paths** mentioned anywhere (in backticks, code blocks or
//!    prose) must exist. A word is a repository path when it starts with one
//!    of the repository's top-level folders (`docs/`, `fixtures/`,
//!    `schema/`, `src/`, `tests/`, `benches/`, `examples/`, `deploy/`,
//!    `fuzz/`, `.ci/`, `proptest-regressions/`), resolved from the
//!    repository root; or when it ends in `.md`, resolved from the document's
//!    folder, else the root, else (a bare name such as `frontier.md`)
//!    `docs/`. Words are split at whitespace and at
//!    `` ` ( ) [ ] " ' , ; | = ``; trailing `. : ! ?` and a `:LINE` suffix
//!    are dropped. A placeholder (`<target>`, `{rate}`, `*`, `…`) ends the
//!    literal part: `fuzz/regressions/<target>/` requires
//!    `fuzz/regressions/`, `fixtures/rejected/*.json` requires
//!    `fixtures/rejected/`.
//!
//! So an example output such as `trace.json` or `receipt.json` (no
//! repository folder, not Markdown) is never required to exist, while
//! `docs/recorder.md`, `fixtures/mixed_120.json` or `CHANGELOG-record.md` is.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's top-level folders: a word starting with one of these is
/// a repository path.
const REPO_DIRS: [&str; 11] = [
    "docs/",
    "fixtures/",
    "schema/",
    "src/",
    "tests/",
    "benches/",
    "examples/",
    "deploy/",
    "fuzz/",
    ".ci/",
    "proptest-regressions/",
];

/// Characters that end the literal part of a path.
const PLACEHOLDERS: [char; 4] = ['<', '{', '*', '…'];

/// Characters that separate words (besides whitespace).
const SEPARATORS: [char; 10] = ['`', '(', ')', '[', ']', '"', '\'', ',', ';', '|'];

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One text to scan: its name in failure messages, the folder relative links
/// resolve from, and the text.
struct Source {
    name: String,
    dir: PathBuf,
    text: String,
}

/// Rule 1: every mention of something outside the repository.
fn outside_references(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    if line.contains("../shared") {
        found.push("`../shared`".to_owned());
    }
    let word_char = |c: char| c.is_alphanumeric() || c == '_';
    for (at, _) in line.match_indices("SPEC") {
        let before = line[..at].chars().next_back();
        let after = line[at + 4..].chars().next();
        if !before.is_some_and(word_char) && !after.is_some_and(word_char) {
            found.push("`SPEC`".to_owned());
        }
    }
    let lower = line.to_lowercase();
    for (at, _) in lower.match_indices("issue") {
        if lower[..at].chars().next_back().is_some_and(word_char) {
            continue;
        }
        let rest = lower[at + 5..]
            .strip_prefix('s')
            .unwrap_or(&lower[at + 5..]);
        let rest = rest.trim_start_matches([' ', '#']);
        if rest.starts_with(|c: char| c.is_ascii_digit()) {
            let number: String = rest.chars().take_while(char::is_ascii_digit).collect();
            found.push(format!("an issue number ({number})"));
        }
    }
    found
}

/// Rule 2: the targets of Markdown links that should be files.
fn link_targets(line: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        let target = after[..end].split_whitespace().next().unwrap_or("");
        let target = target.split('#').next().unwrap_or("");
        if !target.is_empty() && !target.contains("://") && !target.starts_with("mailto:") {
            targets.push(target.to_owned());
        }
        rest = &after[end..];
    }
    targets
}

/// Rule 3: the literal part of every word that names a repository path, and
/// whether it resolves from the document's folder (`.md` names) or the root.
fn path_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    for word in line.split(|c: char| c.is_whitespace() || SEPARATORS.contains(&c)) {
        if word.contains("://") {
            continue;
        }
        // `--out=docs/x.md` names docs/x.md; `docs/x.md#part` names docs/x.md.
        let word = word.rsplit('=').next().unwrap_or(word);
        let word = word.split('#').next().unwrap_or(word);
        let mut word = word.trim_end_matches(['.', ':', '!', '?']);
        // `src/lib.rs:18` names src/lib.rs.
        if let Some((path, line_no)) = word.rsplit_once(':') {
            if !line_no.is_empty() && line_no.chars().all(|c| c.is_ascii_digit()) {
                word = path;
            }
        }
        let literal = match word.find(PLACEHOLDERS) {
            Some(at) => &word[..word[..at].rfind('/').map_or(0, |slash| slash + 1)],
            None => word,
        };
        let is_repo_path = REPO_DIRS.iter().any(|dir| literal.starts_with(dir));
        let is_markdown = word == literal && literal.ends_with(".md");
        if is_repo_path || is_markdown {
            words.push(literal.to_owned());
        }
    }
    words
}

/// Whether `path` exists and lies inside the repository: a file beside the
/// clone (`../something`) is not something a user who cloned it has.
fn in_repo(root: &Path, path: &Path) -> bool {
    match (std::fs::canonicalize(root), std::fs::canonicalize(path)) {
        (Ok(root), Ok(path)) => path.starts_with(root),
        _ => false,
    }
}

/// Every problem in one text, as `name:line: what`.
fn problems(source: &Source) -> Vec<String> {
    let root = repo_root();
    let mut found = Vec::new();
    for (i, line) in source.text.lines().enumerate() {
        let here = format!("{}:{}", source.name, i + 1);
        for what in outside_references(line) {
            found.push(format!("{here}: mentions {what}"));
        }
        let links = link_targets(line);
        for target in &links {
            if !in_repo(root, &source.dir.join(target)) {
                found.push(format!("{here}: links to `{target}`, which does not exist"));
            }
        }
        // A link's target was checked above, from the document's folder.
        for word in path_words(line).into_iter().filter(|w| !links.contains(w)) {
            let exists = if REPO_DIRS.iter().any(|dir| word.starts_with(dir)) {
                in_repo(root, &root.join(&word))
            } else {
                in_repo(root, &source.dir.join(&word))
                    || in_repo(root, &root.join(&word))
                    || (!word.contains('/') && in_repo(root, &root.join("docs").join(&word)))
            };
            if !exists {
                found.push(format!(
                    "{here}: names `{word}`, which is not in the repository"
                ));
            }
        }
    }
    found
}

fn read_source(relative: &str) -> Source {
    let path = repo_root().join(relative);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    Source {
        name: relative.to_owned(),
        dir: path.parent().unwrap_or(repo_root()).to_path_buf(),
        text,
    }
}

/// README.md, CHANGELOG.md and every docs/*.md, sorted.
fn documents() -> Vec<Source> {
    let mut names: Vec<String> = std::fs::read_dir(repo_root().join("docs"))
        .expect("docs/ is readable")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    names.sort();
    // The contract and the guides (reviewer, recorder, report, frontier,
    // import, reliability): fewer means the scan is looking in the wrong place.
    assert!(names.len() >= 6, "too few docs/*.md found: {names:?}");
    let mut sources = vec![read_source("README.md"), read_source("CHANGELOG.md")];
    sources.extend(names.iter().map(|n| read_source(n)));
    sources
}

fn goodput_help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_goodput"))
        .args(args)
        .arg("--help")
        .output()
        .expect("the goodput binary runs");
    assert!(out.status.success(), "goodput {args:?} --help failed");
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

/// The subcommand names listed under `Commands:` in a help text (without
/// `help`, which prints the others' help).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| line.trim_end() != "Commands:")
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        // Names are indented by two spaces; wrapped descriptions by more.
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// The `--help` of the top-level command and of every subcommand, recursively.
fn help_texts() -> Vec<Source> {
    let mut pending: Vec<Vec<String>> = vec![Vec::new()];
    let mut sources = Vec::new();
    while let Some(path) = pending.pop() {
        let args: Vec<&str> = path.iter().map(String::as_str).collect();
        let text = goodput_help(&args);
        for sub in subcommands(&text) {
            let mut child = path.clone();
            child.push(sub);
            pending.push(child);
        }
        let name = if path.is_empty() {
            "goodput --help".to_owned()
        } else {
            format!("goodput {} --help", path.join(" "))
        };
        sources.push(Source {
            name,
            dir: repo_root().to_path_buf(),
            text,
        });
    }
    sources
}

#[test]
fn the_scanner_finds_each_kind_of_bad_reference() {
    let source = Source {
        name: "sample".to_owned(),
        dir: repo_root().join("docs"),
        text: [
            "The full contract is `../shared/SPEC.md`.",                     // 1: ../shared, SPEC
            "Mutations (SPEC §6); see issue #6 and Issue 10.",             // 2: SPEC, two issues
            "Rules: [reviewer](reviewer.md), [gone](gone.md#part).",       // 3: gone.md (link and word)
            "Run `goodput analyze fixtures/nope.json --out trace.json`.",  // 4: fixtures/nope.json
            "Kept in `fuzz/nowhere/<target>/`; figures in CHANGELOG-x.md.", // 5: two
            "Fine: `fixtures/mixed_120.json`, docs/contract.md, src/lib.rs:18, `fixtures/rejected/*.json`, spec_example, tissue 5, https://example.com/src/x.rs.",
        ]
        .join("\n"),
    };
    let found = problems(&source);
    let expected = [
        "sample:1: mentions `../shared`",
        "sample:1: mentions `SPEC`",
        "sample:1: names `../shared/SPEC.md`, which is not in the repository",
        "sample:2: mentions `SPEC`",
        "sample:2: mentions an issue number (6)",
        "sample:2: mentions an issue number (10)",
        "sample:3: links to `gone.md`, which does not exist",
        "sample:4: names `fixtures/nope.json`, which is not in the repository",
        "sample:5: names `fuzz/nowhere/`, which is not in the repository",
        "sample:5: names `CHANGELOG-x.md`, which is not in the repository",
    ];
    assert_eq!(found, expected, "{found:#?}");
}

#[test]
fn the_subcommand_list_is_read_from_the_commands_section() {
    let help = "Usage: goodput <COMMAND>\n\nCommands:\n  analyze   Judge a trace\n  import    Convert an export and compare the\n            figures\n  help      Print this message\n\nOptions:\n  -h, --help  Print help\n";
    assert_eq!(subcommands(help), ["analyze", "import"]);
}

#[test]
fn documents_cite_only_repository_files() {
    let sources = documents();
    let found: Vec<String> = sources.iter().flat_map(problems).collect();
    assert!(
        found.is_empty(),
        "{} reference(s) to things a clone of the repository does not have \
         (cite docs/contract.md §N instead of outside files or issues):\n{}",
        found.len(),
        found.join("\n")
    );
}

/// Kept apart from the documents' test on purpose: the help texts live in
/// `src/` (the `mutate` help still cites the outside specification when this
/// test was written), so this test names exactly what is left to fix there.
#[test]
fn help_texts_cite_only_repository_files() {
    let sources = help_texts();
    // The top-level command and at least the analyzer, reviewer and recorder
    // commands must have been found, or the Commands: parsing broke.
    let names: Vec<&str> = sources.iter().map(|s| s.name.as_str()).collect();
    for expected in [
        "goodput --help",
        "goodput analyze --help",
        "goodput mutate --help",
        "goodput record --help",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} not scanned: {names:?}"
        );
    }
    let found: Vec<String> = sources.iter().flat_map(problems).collect();
    assert!(
        found.is_empty(),
        "{} reference(s) in --help texts to things a clone of the repository \
         does not have (cite docs/contract.md §N instead):\n{}",
        found.len(),
        found.join("\n")
    );
}
