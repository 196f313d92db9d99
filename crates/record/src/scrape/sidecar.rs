//! The metrics sidecar as the scraper writes it: each scrape's line is
//! appended to a temporary file beside the trace as it comes and dropped,
//! its sha256 and the peaks kept as running figures, and the file renamed
//! to `TRACE.metrics.jsonl` when the run ends. So the recorder holds one
//! page at a time, however long the run and however large the pages
//! (before, every parsed scrape was held until the end: a 1 MB page every
//! 200 ms grew the recorder by ~17 MB/s).

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use goodput_core::server_metrics::{sidecar_line, MetricsLine, Peaks};

use crate::error::RecordError;

/// What was written: the sidecar's path, its sha256 (lowercase hex, of the
/// file's bytes) and the peaks and counts of its lines.
#[derive(Debug, Clone)]
pub struct WrittenSidecar {
    /// Where the sidecar is.
    pub path: PathBuf,
    /// sha256 of its bytes, lowercase hex.
    pub sha256: String,
    /// Peaks of the mapped series, snapshots and gaps.
    pub peaks: Peaks,
}

/// A sidecar being written: a temporary file in the trace's directory
/// (removed if the run ends without [`SidecarFile::finish`]).
pub struct SidecarFile {
    path: PathBuf,
    out: BufWriter<tempfile::NamedTempFile>,
    sha: Sha256,
    peaks: Peaks,
    /// The first write that failed; later lines are not written.
    failed: Option<io::Error>,
}

impl std::fmt::Debug for SidecarFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SidecarFile")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

fn write_error(path: &Path, source: io::Error) -> RecordError {
    RecordError::Write {
        path: path.display().to_string(),
        source,
    }
}

impl SidecarFile {
    /// Starts the sidecar for `path`, before the run, so a directory that
    /// cannot take it fails the run before anything is sent. Something at
    /// `path` that is not a regular file (a device, a FIFO, a symlink) is
    /// refused: the sidecar never replaces one.
    pub fn create(path: &Path) -> Result<SidecarFile, RecordError> {
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            if !meta.file_type().is_file() {
                let why = io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "it exists and is not a regular file (the sidecar replaces only a regular file)",
                );
                return Err(write_error(path, why));
            }
        }
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let tmp = tempfile::Builder::new()
            .prefix(".goodput-metrics-")
            .suffix(".tmp")
            .tempfile_in(dir)
            .map_err(|e| write_error(path, e))?;
        Ok(SidecarFile {
            path: path.to_owned(),
            out: BufWriter::with_capacity(1 << 16, tmp),
            sha: Sha256::new(),
            peaks: Peaks::default(),
            failed: None,
        })
    }

    /// Appends one scrape's line (and forgets it). After a failed write
    /// nothing more is written; [`SidecarFile::finish`] reports it.
    pub fn push(&mut self, line: &MetricsLine) {
        if self.failed.is_some() {
            return;
        }
        let bytes = sidecar_line(line);
        match self.out.write_all(&bytes) {
            Ok(()) => {
                self.sha.update(&bytes);
                self.peaks = self.peaks.with(line);
            }
            Err(e) => self.failed = Some(e),
        }
    }

    /// Whether a write has failed (the scraper then stops).
    pub fn has_failed(&self) -> bool {
        self.failed.is_some()
    }

    /// Flushes the file to disk and renames it to its path (0644, like
    /// the trace); the first failed write, if any, is the error.
    pub fn finish(self) -> Result<WrittenSidecar, RecordError> {
        let path = self.path;
        if let Some(e) = self.failed {
            return Err(write_error(&path, e));
        }
        let tmp = self
            .out
            .into_inner()
            .map_err(|e| write_error(&path, e.into_error()))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(0o644))
                .map_err(|e| write_error(&path, e))?;
        }
        tmp.as_file()
            .sync_all()
            .map_err(|e| write_error(&path, e))?;
        tmp.persist(&path)
            .map_err(|e| write_error(&path, e.error))?;
        let sha256 = self
            .sha
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Ok(WrittenSidecar {
            path,
            sha256,
            peaks: self.peaks,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use goodput_core::server_metrics::sidecar_bytes;

    #[test]
    fn the_streamed_file_is_the_lines_and_its_sha_is_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.metrics.jsonl");
        let lines = [
            MetricsLine::gap(0.5, "timeout"),
            MetricsLine::gap(200.25, "HTTP 503"),
        ];
        let mut file = SidecarFile::create(&path).unwrap();
        for line in &lines {
            file.push(line);
        }
        // Nothing under the final name until the run ends.
        assert!(!path.exists());
        let written = file.finish().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes, sidecar_bytes(&lines));
        let gap = |t: &str, why: &str| {
            format!(
                "{{\"tMs\":{t},\"error\":\"{why}\",\"waiting\":null,\"running\":null,\
                 \"kvUsage\":null,\"kvUsageMax\":null,\"preemptions\":null}}\n"
            )
        };
        assert_eq!(
            String::from_utf8(bytes.clone()).unwrap(),
            gap("0.5", "timeout") + &gap("200.25", "HTTP 503")
        );
        let sha: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(written.sha256, sha);
        assert_eq!((written.peaks.snapshots, written.peaks.gaps), (0, 2));
    }

    #[cfg(unix)]
    #[test]
    fn a_sidecar_path_that_is_not_a_regular_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.metrics.jsonl");
        std::os::unix::fs::symlink("/dev/null", &path).unwrap();
        let e = SidecarFile::create(&path).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        assert!(std::fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_symlink());
    }
}
