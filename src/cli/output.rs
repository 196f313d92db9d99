//! Where the command-line layer's bytes go: standard output (a closed pipe
//! is not an error), files written atomically, and the one check
//! ([`check_output`]) that refuses an output path — not a regular file, one of
//! the command's inputs, or unwritable — before any work is done.

use std::io::Write;
use std::path::Path;

use crate::cli::error::Error;
use goodput_util::io::{write_atomic, OutputError};
use goodput_util::json::to_canonical_json;

/// Writes to stdout; a closed pipe (`goodput … | head`) is not an error.
pub(crate) fn emit(stdout: &mut dyn Write, bytes: &[u8]) -> Result<(), Error> {
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(source) => Err(Error::Write {
            path: "standard output".to_owned(),
            source,
        }),
    }
}

/// Canonical JSON of a command's result; `what` names it if it cannot be rendered.
pub(crate) fn json_bytes<T: serde::Serialize>(value: &T, what: &str) -> Result<Vec<u8>, Error> {
    to_canonical_json(value).map_err(|e| Error::Write {
        path: what.to_owned(),
        source: e.into(),
    })
}

/// Writes `bytes` to `path` atomically; a failure names the path.
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    write_atomic(path, bytes).map_err(|source| Error::Write {
        path: path.display().to_string(),
        source,
    })
}

/// Bytes the writability probe writes and syncs: enough that a full disk
/// (or a file-size limit smaller than a page) fails the probe, small enough
/// to cost nothing.
pub const WRITE_PROBE_BYTES: usize = 4096;

/// The one check every command's output path goes through, before any work:
/// `path` (named `what` in the message: `--out`, `--svg`, "the spool") must
/// be a regular file, a path not yet there, or a link to a regular file
/// (written through); a device, FIFO, socket or directory is refused — the
/// atomic rename would replace it — and so is any of `inputs` (`-` is
/// standard input and skipped), which the write would destroy. Then the
/// directory the write will use is probed (a 4 KiB file, synced, removed).
pub fn check_output(what: &str, path: &Path, inputs: &[&Path]) -> Result<(), Error> {
    let target = goodput_util::io::check_output(path, inputs).map_err(|e| match e {
        OutputError::Io { path, source } => Error::Write { path, source },
        source => Error::Output {
            what: what.to_owned(),
            source,
        },
    })?;
    probe(path, &target)
}

/// Fails unless a file can be created next to `target` (where the atomic write
/// will put its temporary file), [`WRITE_PROBE_BYTES`] can be written to it
/// and synced (an empty file fits on a full disk; this does not). The probe
/// file is removed, whatever happens; a failure names `path` as given.
///
/// This cannot promise that the whole trace will fit later: if the final
/// write fails, the atomic write still leaves no partial file at `path`.
fn probe(path: &Path, target: &Path) -> Result<(), Error> {
    let err = |source| Error::Write {
        path: path.display().to_string(),
        source,
    };
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut probe = tempfile::Builder::new()
        .prefix(".goodput-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(err)?;
    probe
        .write_all(&[0u8; WRITE_PROBE_BYTES])
        .and_then(|()| probe.as_file().sync_all())
        .map_err(err)
    // `probe` is deleted on drop.
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unwritable_output_is_refused_before_anything_runs() {
        let dir = tempfile::tempdir().unwrap();
        let check = |p: &Path| check_output("--out", p, &[]);
        assert!(check(&dir.path().join("t.json")).is_ok());
        assert!(check(dir.path()).is_err());
        assert!(check(&dir.path().join("missing/t.json")).is_err());
        // No temporary file is left behind by the check.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
