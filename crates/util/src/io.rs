//! Reading inputs within their byte limit, and writing outputs atomically.
//!
//! What an output path may be (the policy every `--out` goes through):
//! a regular file, or a path that does not exist yet, is written atomically
//! (a temporary file beside it, then a rename); a symbolic link whose target
//! is a regular file is written through (the target is replaced atomically,
//! the link stays a link); anything else that exists (a device, a FIFO, a
//! socket, a directory, a link to one of those or to nothing) is refused,
//! because renaming over it would destroy it and writing into it is not a
//! file the user can read back.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

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

/// Why a path cannot be written as an output.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// Something that exists at the path is not a regular file.
    #[error("{path} is {kind}, not a regular file: goodput writes only regular files")]
    NotRegular {
        /// The path as given.
        path: String,
        /// What it is ("a character device", "a FIFO (named pipe)", …).
        kind: &'static str,
    },
    /// The output is one of the command's inputs: writing it would destroy
    /// the input before (or while) it is read.
    #[error("{path} is the input {input}: goodput does not overwrite its own input")]
    SameAsInput {
        /// The output path as given.
        path: String,
        /// The input path as given.
        input: String,
    },
    /// The path could not be inspected (other than "it does not exist").
    #[error("cannot inspect {path}: {source}")]
    Io {
        /// The path as given.
        path: String,
        /// The underlying error.
        source: io::Error,
    },
}

/// What kind of non-regular file `ft` is, in words; `None` for a regular file.
fn non_regular_kind(ft: std::fs::FileType) -> Option<&'static str> {
    if ft.is_file() {
        return None;
    }
    if ft.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_char_device() {
            return Some("a character device");
        }
        if ft.is_block_device() {
            return Some("a block device");
        }
        if ft.is_fifo() {
            return Some("a FIFO (named pipe)");
        }
        if ft.is_socket() {
            return Some("a socket");
        }
    }
    Some("not a regular file")
}

/// The file an output to `path` really replaces: `path` itself when it is a
/// regular file or does not exist; the final target of a symbolic link to a
/// regular file (so the link survives). Anything else is
/// [`OutputError::NotRegular`]. Only the file's metadata is read — nothing
/// is opened, so a FIFO is refused without blocking.
pub fn output_target(path: &Path) -> Result<PathBuf, OutputError> {
    let shown = || path.display().to_string();
    // Nothing there, or nothing that can be looked at (a parent that is a
    // file, a directory without search permission): nothing to destroy, and
    // the write itself says why it cannot be made.
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(path.to_owned());
    };
    if !meta.file_type().is_symlink() {
        return match non_regular_kind(meta.file_type()) {
            None => Ok(path.to_owned()),
            Some(kind) => Err(OutputError::NotRegular {
                path: shown(),
                kind,
            }),
        };
    }
    // A link: follow the whole chain; a dangling or looping link is refused
    // rather than guessed at.
    let Ok(target) = std::fs::canonicalize(path) else {
        return Err(OutputError::NotRegular {
            path: shown(),
            kind: "a symbolic link that leads to no file",
        });
    };
    let meta = std::fs::metadata(&target).map_err(|source| OutputError::Io {
        path: shown(),
        source,
    })?;
    match non_regular_kind(meta.file_type()) {
        None => Ok(target),
        Some(kind) => Err(OutputError::NotRegular {
            path: shown(),
            kind: link_to(kind),
        }),
    }
}

/// "a symbolic link to …" for a non-regular target `kind`.
fn link_to(kind: &'static str) -> &'static str {
    match kind {
        "a directory" => "a symbolic link to a directory",
        "a character device" => "a symbolic link to a character device",
        "a block device" => "a symbolic link to a block device",
        "a FIFO (named pipe)" => "a symbolic link to a FIFO (named pipe)",
        "a socket" => "a symbolic link to a socket",
        _ => "a symbolic link to something that is not a regular file",
    }
}

/// Whether `output` and `input` name the same existing file: the same
/// device and inode (a hard link, a symbolic link, `./t.json` and `t.json`
/// all count), else the same canonical path. A path that does not exist is
/// no input's file.
pub fn same_file(output: &Path, input: &Path) -> bool {
    let (Ok(a), Ok(b)) = (std::fs::metadata(output), std::fs::metadata(input)) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if a.dev() == b.dev() && a.ino() == b.ino() {
            return true;
        }
    }
    let _ = (a, b);
    matches!(
        (std::fs::canonicalize(output), std::fs::canonicalize(input)),
        (Ok(x), Ok(y)) if x == y
    )
}

/// The output policy of every command: `path` must be writable as a regular
/// file ([`output_target`]) and must not be one of `inputs` (`-`, standard
/// input, is skipped). Returns the file the write will replace.
pub fn check_output(path: &Path, inputs: &[&Path]) -> Result<PathBuf, OutputError> {
    let target = output_target(path)?;
    for input in inputs.iter().filter(|p| p.as_os_str() != "-") {
        if same_file(path, input) {
            return Err(OutputError::SameAsInput {
                path: path.display().to_string(),
                input: input.display().to_string(),
            });
        }
    }
    Ok(target)
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
///
/// `path` goes through [`output_target`] first: a link to a regular file is
/// written through, and a device, FIFO, socket or directory is refused
/// (`InvalidInput`) instead of being renamed over.
pub fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let target = output_target(path).map_err(|e| match e {
        OutputError::Io { source, .. } => source,
        refused => io::Error::new(io::ErrorKind::InvalidInput, refused),
    })?;
    let path = target.as_path();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_or_a_new_path_is_its_own_target() {
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("new.json");
        assert_eq!(output_target(&new).unwrap(), new);
        std::fs::write(&new, b"old").unwrap();
        assert_eq!(output_target(&new).unwrap(), new);
    }

    #[cfg(unix)]
    #[test]
    fn a_link_is_written_through_and_stays_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("real.json");
        std::fs::write(&target, b"old").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
    }

    #[cfg(unix)]
    #[test]
    fn a_socket_a_directory_and_a_dangling_link_are_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("s");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let err = write_atomic(&sock, b"x").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(
            err.to_string(),
            format!(
                "{} is a socket, not a regular file: goodput writes only regular files",
                sock.display()
            )
        );
        // Still the socket: nothing was renamed over it.
        let kind = std::fs::symlink_metadata(&sock).unwrap().file_type();
        assert!(std::os::unix::fs::FileTypeExt::is_socket(&kind));
        let err = output_target(dir.path()).unwrap_err().to_string();
        assert!(err.contains("is a directory, not a regular file"), "{err}");
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        let err = output_target(&dangling).unwrap_err().to_string();
        assert!(
            err.contains("is a symbolic link that leads to no file"),
            "{err}"
        );
    }

    /// Only metadata is read: the device is named and nothing is written
    /// (as root, the old rename replaced /dev/null with a JSON file).
    #[cfg(unix)]
    #[test]
    fn a_device_is_refused_by_its_metadata_alone() {
        let null = Path::new("/dev/null");
        let Ok(meta) = std::fs::symlink_metadata(null) else {
            return;
        };
        if !std::os::unix::fs::FileTypeExt::is_char_device(&meta.file_type()) {
            return;
        }
        assert_eq!(
            output_target(null).unwrap_err().to_string(),
            "/dev/null is a character device, not a regular file: goodput writes only regular files"
        );
    }

    #[test]
    fn an_input_reached_by_another_name_is_the_same_file() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("t.json");
        std::fs::write(&t, b"{}").unwrap();
        let other = dir.path().join("./t.json");
        assert!(same_file(&other, &t));
        let hard = dir.path().join("hard.json");
        std::fs::hard_link(&t, &hard).unwrap();
        assert!(same_file(&hard, &t));
        let err = check_output(&hard, &[Path::new("-"), &t]).unwrap_err();
        assert!(matches!(err, OutputError::SameAsInput { .. }));
        assert!(!same_file(&dir.path().join("missing"), &t));
        assert!(check_output(&dir.path().join("r.json"), &[&t]).is_ok());
    }
}
