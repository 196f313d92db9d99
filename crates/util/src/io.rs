//! Reading inputs within their byte limit, and writing outputs atomically.

use std::io::{self, Read, Write};
use std::path::Path;

/// Why an input could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The operating system refused.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path as given (`-` for standard input).
        path: String,
        /// The underlying error.
        source: io::Error,
    },
    /// The input is larger than the limit; nothing past the limit was read.
    #[error("{path} is larger than the limit of {limit} bytes (raise it with --max-bytes or GOODPUT_MAX_BYTES)")]
    TooLarge {
        /// The path as given.
        path: String,
        /// The limit in force.
        limit: u64,
        /// The size, when the file system told it.
        size: Option<u64>,
    },
}

/// Reads `path` (`-` for standard input), reading at most `limit + 1` bytes so
/// an oversized input is refused before it is parsed or fully buffered.
pub fn read_limited(path: &str, limit: u64) -> Result<Vec<u8>, ReadError> {
    let io_err = |source| ReadError::Io {
        path: path.to_owned(),
        source,
    };
    let mut buf = Vec::new();
    if path == "-" {
        io::stdin()
            .lock()
            .take(limit.saturating_add(1))
            .read_to_end(&mut buf)
            .map_err(io_err)?;
    } else {
        let file = std::fs::File::open(path).map_err(io_err)?;
        let size = file
            .metadata()
            .ok()
            .filter(|m| m.is_file())
            .map(|m| m.len());
        if let Some(size) = size {
            if size > limit {
                return Err(ReadError::TooLarge {
                    path: path.to_owned(),
                    limit,
                    size: Some(size),
                });
            }
            buf.reserve_exact(size as usize);
        }
        file.take(limit.saturating_add(1))
            .read_to_end(&mut buf)
            .map_err(io_err)?;
    }
    if buf.len() as u64 > limit {
        return Err(ReadError::TooLarge {
            path: path.to_owned(),
            limit,
            size: None,
        });
    }
    Ok(buf)
}

/// Writes `bytes` to `path` atomically: a temporary file in the same
/// directory, flushed to disk, then renamed over `path`. Readers see the old
/// file or the complete new one, never a partial write.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, |w| w.write_all(bytes))
}

/// [`write_atomic`] for a file written piece by piece (a trace streamed from
/// the recorder's spool): `fill` writes the bytes through a buffer; the file
/// appears under `path` only when `fill` succeeded.
pub fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".goodput-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    {
        let mut buffered = io::BufWriter::with_capacity(1 << 16, tmp.as_file_mut());
        fill(&mut buffered)?;
        buffered.flush()?;
    }
    // tempfile creates the file 0600; receipts, traces and reports are meant
    // to be shared, so give them the usual 0644 before they appear.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
