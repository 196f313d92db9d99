//! Where the command-line layer's bytes go: standard output (a closed pipe
//! is not an error), files written atomically, and the probe that refuses an
//! unwritable output path before any work is done.

use std::io::Write;
use std::path::Path;

use crate::cli::error::Error;
use goodput_util::io::write_atomic;
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

/// Fails unless a file can be created next to `path` (where the atomic write
/// will put its temporary file), [`WRITE_PROBE_BYTES`] can be written to it
/// and synced (an empty file fits on a full disk; this does not), and `path`
/// is not a directory. The probe file is removed, whatever happens.
///
/// This cannot promise that the whole trace will fit later: if the final
/// write fails, the atomic write still leaves no partial file at `path`.
pub fn check_writable(path: &Path) -> Result<(), Error> {
    let err = |source| Error::Write {
        path: path.display().to_string(),
        source,
    };
    if path.is_dir() {
        return Err(err(std::io::Error::other("it is a directory")));
    }
    let dir = match path.parent() {
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
        assert!(check_writable(&dir.path().join("t.json")).is_ok());
        assert!(check_writable(dir.path()).is_err());
        assert!(check_writable(&dir.path().join("missing/t.json")).is_err());
        // No temporary file is left behind by the check.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
