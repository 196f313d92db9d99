//! The spool: every request's ending appended to a file beside the trace as
//! it ends, so memory does not grow with the length of a run and a recorder
//! that dies (a crash, an OOM kill, `kill -9`) leaves its rows behind.
//!
//! Format (`goodput-spool/1`): JSON Lines, append-only.
//! - Line 1, the header: `{"spool": "goodput-spool/1", "frame": …,
//!   "arrivalsMs": […], "prompts": …}` — the document frame
//!   ([`Frame`]: window, gates, workload), the schedule (open loop), and
//!   enough about the prompts to describe a request that never reported
//!   (their class, length and hash; never their text).
//! - `{"first": {"index": i, "sentMs": s, "atMs": t}}`: request `i`, sent
//!   at `s`, got its first token at `t` (one line per request, written as
//!   the token comes, before its ending; `arrivalMs` too where the header
//!   has no schedule: closed loop, sessions; `sentMs` in open loop only,
//!   for the send lag; `answerMs` when the same frame carried the first
//!   answer token). Only a recovery reads it: the request's ending, if
//!   spooled, carries the same instant.
//! - `{"answer": {"index": i, "atMs": t}}`: request `i`, whose `first` line
//!   had no answer, got its first answer token at `t` (a reasoning model's
//!   answer after its thinking; at most one per request, after its `first`
//!   line and before its ending). A header without `"firstTokens":
//!   true` is a spool from before these lines existed: a recovery then
//!   cannot tell "no first token" from "not written down" and says so on
//!   each unended row (`firstTokenUnknown`).
//! - `{"ended": {…}}`: one request's observation and ending, exactly as the
//!   runner handed it over (numbers are shortest round-trip decimals, read
//!   back exactly).
//! - `{"mark": {"atMs": t, "dispatched": n}}`: by `t` (ms since t0) every
//!   ending above had been handed over and the first `n` requests had been
//!   dispatched. A mark is written every [`MARK_EVERY`](crate::run::MARK_EVERY)
//!   and the file is flushed to the operating system with it, so a dead
//!   process loses at most the last quarter second (a power cut can lose
//!   more: the spool is not fsynced).
//! - `{"end": {"atMs": t, "interruptedAtMs": i, "planned": p, "rows": r}}`:
//!   the run is over (written once, after the last mark, and flushed): it
//!   stopped observing at `t`, was interrupted at `i` (absent: it ran to its
//!   horizon), planned `p` requests and its trace gets `r` rows. A spool
//!   whose trace could not be written ends with it, and its recovery writes
//!   the run as it finished, not as cut where it died.
//!
//! A write that fails (a full disk) stops the run at once, as an interrupt
//! does ([`Collector::broken`]): the spool written so far stays, for
//! `record --recover`, and nothing is sent whose row would be lost.
//!
//! Building the trace from the spool reads it twice: once to learn the
//! token mode (one document cannot mix usage and chunk counts), which
//! requests ended and the first tokens of those that did not, once to write
//! the rows in index order through a reorder buffer that holds only the rows
//! that ended before an earlier-indexed one (bounded by the rate times the
//! slowest request, not by the run's length; the first tokens held are
//! those of requests in flight at that point of the file, bounded alike).
//! The bytes are those the in-memory path writes for the same rows.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::RecordError;
use goodput_core::server_timing::{Sources, SERVER_TIMING_LABEL};
use goodput_core::trace::write::TraceRow;
use goodput_core::trace::{Labels, Scalar, TokenCount};

use crate::exchange::{Ending, FailReason, Observation};
use crate::output::frame::{Frame, PromptMeta, Stop};
use crate::output::summary::{Figures, ScheduleDraw, Tally};
use crate::plan::{Plan, Written};
use crate::run::{Collector, Finished, FirstToken, Load, RunEnd, RunOutcome};
use crate::workload::body::PromptSource;

/// The tag of the spool's header line.
pub const SPOOL_SCHEMA: &str = "goodput-spool/1";

/// Where the spool of the trace `out` goes: beside it, `<out>.spool`.
pub fn spool_path(out: &Path) -> PathBuf {
    let mut name = out.as_os_str().to_owned();
    name.push(".spool");
    PathBuf::from(name)
}

pub use crate::error::SpoolError;

/// What the spool knows about prompts: enough to describe a request that
/// never reported (class, length, hash), never the text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Prompts {
    /// Seeded random words: recomputed from the seed.
    Random {
        /// Words per prompt.
        words: u32,
        /// The run's seed.
        seed: u64,
    },
    /// A list used cyclically: each entry's meta.
    List {
        /// One per entry of the list.
        entries: Vec<PromptMeta>,
    },
    /// Prepared prompts or session turns: one meta per request of the
    /// whole schedule, with the workload's labels.
    Each {
        /// One per request (row), in order.
        entries: Vec<PromptMeta>,
    },
}

impl Prompts {
    /// The spool's description of a prompt source.
    pub fn of(source: &PromptSource) -> Prompts {
        match source {
            PromptSource::Random { words, seed } => Prompts::Random {
                words: *words,
                seed: *seed,
            },
            PromptSource::List(list) => Prompts::List {
                entries: list.iter().map(PromptMeta::of).collect(),
            },
            PromptSource::Strided { inner, .. } => Prompts::of(inner),
            PromptSource::Recipes(set) => Prompts::Each {
                entries: (0..set.recipes.len())
                    .map(|i| PromptMeta::of_request(source, i))
                    .collect(),
            },
            PromptSource::Sessions(set) => Prompts::Each {
                entries: (0..set.rows_of(set.sessions()))
                    .map(|i| PromptMeta::of_request(source, i))
                    .collect(),
            },
        }
    }

    /// The meta of the prompt of request `index` of the whole schedule.
    pub fn meta(&self, index: usize) -> Option<PromptMeta> {
        match self {
            Prompts::Random { words, seed } => Some(PromptMeta::of(
                &PromptSource::Random {
                    words: *words,
                    seed: *seed,
                }
                .prompt(index),
            )),
            Prompts::List { entries } if !entries.is_empty() => {
                Some(entries[index % entries.len()].clone())
            }
            Prompts::List { .. } => None,
            Prompts::Each { entries } => entries.get(index).cloned(),
        }
    }
}

/// The spool's first line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    /// Always [`SPOOL_SCHEMA`].
    pub spool: String,
    /// The document frame.
    pub frame: Frame,
    /// The schedule (open loop; empty in closed loop), ms since t0.
    pub arrivals_ms: Vec<f64>,
    /// The prompts' meta.
    pub prompts: Prompts,
    /// A multi-turn run's sessions (their turns' instants are not known
    /// before they run, so `arrivals_ms` is empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<SessionLayout>,
    /// The spool has a `first` line for every first token (false, absent:
    /// a spool from a recorder before those lines, whose unended requests'
    /// first tokens are unknown).
    #[serde(default)]
    pub first_tokens: bool,
}

/// Where a multi-turn run's sessions start and which rows are theirs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionLayout {
    /// Scheduled start of each session, ms since t0.
    pub starts_ms: Vec<f64>,
    /// Row index of each session's first turn, and the total at the end.
    pub offsets: Vec<usize>,
}

/// How one request ended, as spooled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum SpoolEnding {
    Completed {
        #[serde(rename = "completedMs")]
        completed_ms: f64,
    },
    Failed {
        reason: String,
        #[serde(rename = "endedMs")]
        ended_ms: f64,
    },
    InFlight,
}

/// One request's line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SpoolRow {
    index: usize,
    arrival_ms: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sent_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    first_token_ms: Option<f64>,
    /// The first answer token (absent: none, or a spool from before answers
    /// were told apart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    first_answer_ms: Option<f64>,
    content_chunks: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    usage_output_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    usage_prompt_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    usage_reasoning_tokens: Option<u64>,
    finished: bool,
    ending: SpoolEnding,
    /// The row's `errorText` label, as the runner made it (redacted, cut).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error_text: Option<String>,
    /// The gaps between content events (absent: none, or a spool from
    /// before gaps were recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gaps_ms: Option<Vec<f64>>,
    /// More gaps came than a row may hold, so the row carries none.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    gaps_dropped: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    class: Option<String>,
    prompt_chars: u64,
    prompt_hash: String,
    /// The workload's labels of the request (`promptTokens`, `session`…).
    #[serde(default, skip_serializing_if = "Labels::is_empty")]
    labels: Labels,
    /// What the server said of its own timing (`server.*` labels).
    #[serde(default, skip_serializing_if = "Labels::is_empty")]
    server: Labels,
    /// Which timing sources the response carried.
    #[serde(default, skip_serializing_if = "Sources::is_none")]
    server_sources: Sources,
}

/// A request's first token, as spooled before its ending.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FirstLine {
    index: usize,
    /// Only where the header has no schedule (closed loop, sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    arrival_ms: Option<f64>,
    /// Only in open loop (where the row's send lag needs it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sent_ms: Option<f64>,
    at_ms: f64,
    /// The first answer, when the first token's frame carried it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    answer_ms: Option<f64>,
}

/// A request's first answer token, told after its first token.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnswerLine {
    index: usize,
    at_ms: f64,
}

/// What the spool knows of a request that got its first token and has no
/// ending in the spool.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpooledFirst {
    /// Its arrival, ms since t0, where the header has no schedule.
    pub arrival_ms: Option<f64>,
    /// When it was sent, ms since t0 (open loop).
    pub sent_ms: Option<f64>,
    /// When its first token came, ms since t0.
    pub at_ms: f64,
    /// When its first answer token came, ms since t0, if the spool says.
    pub answer_ms: Option<f64>,
}

impl SpooledFirst {
    /// What the request's row knows: the send, the first token and answer.
    pub fn observation(&self) -> Observation {
        Observation {
            sent_ms: self.sent_ms,
            first_token_ms: Some(self.at_ms),
            first_answer_ms: self.answer_ms,
            content_chunks: 1,
            ..Observation::default()
        }
    }
}

// One line exists at a time (written or read, then dropped): boxing the
// large variant would only add an allocation per request.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Line {
    First(FirstLine),
    Answer(AnswerLine),
    Ended(SpoolRow),
    Mark {
        #[serde(rename = "atMs")]
        at_ms: f64,
        dispatched: usize,
    },
    End(RunEnd),
    /// The spool's own write failed (a full disk): the error, written into
    /// the room [`RESERVE_BYTES`] kept for it, so a recovered trace can say
    /// why the run stopped.
    WriteFailed(String),
}

/// Room kept beside the spool (`SPOOL.reserve`) from its creation, freed
/// when a spool write fails so that the failure itself can still be
/// written: two pages, far more than the one short line it takes.
pub const RESERVE_BYTES: usize = 8192;

/// The reserve file of a spool: `SPOOL.reserve`.
pub fn reserve_path(spool: &Path) -> PathBuf {
    let mut name = spool.as_os_str().to_owned();
    name.push(".reserve");
    PathBuf::from(name)
}

/// A spooled failure reason that no [`FailReason`] writes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown failure reason `{0}`")]
struct UnknownReason(String);

fn parse_reason(text: &str) -> Option<FailReason> {
    FailReason::parse(text)
}

impl SpoolRow {
    fn of(index: usize, f: &Finished) -> SpoolRow {
        SpoolRow {
            index,
            arrival_ms: f.arrival_ms,
            sent_ms: f.obs.sent_ms,
            first_token_ms: f.obs.first_token_ms,
            first_answer_ms: f.obs.first_answer_ms,
            content_chunks: f.obs.content_chunks,
            usage_output_tokens: f.obs.usage_output_tokens,
            usage_prompt_tokens: f.obs.usage_prompt_tokens,
            usage_reasoning_tokens: f.obs.usage_reasoning_tokens,
            finished: f.obs.finished,
            error_text: f.obs.error_text.clone(),
            gaps_ms: (!f.obs.gaps_ms.is_empty()).then(|| f.obs.gaps_ms.clone()),
            gaps_dropped: f.obs.gaps_dropped,
            ending: match f.ending {
                Ending::Completed { completed_ms } => SpoolEnding::Completed { completed_ms },
                Ending::Failed { reason, ended_ms } => SpoolEnding::Failed {
                    reason: reason.as_string(),
                    ended_ms,
                },
                Ending::InFlight => SpoolEnding::InFlight,
            },
            class: f.class.clone(),
            prompt_chars: f.prompt_chars,
            prompt_hash: f.prompt_hash.clone(),
            labels: f.labels.clone(),
            server: f.obs.server.clone(),
            server_sources: f.obs.server_sources,
        }
    }

    fn finished(self) -> Result<(usize, Finished), UnknownReason> {
        let ending = match self.ending {
            SpoolEnding::Completed { completed_ms } => Ending::Completed { completed_ms },
            SpoolEnding::Failed { reason, ended_ms } => Ending::Failed {
                reason: parse_reason(&reason).ok_or(UnknownReason(reason))?,
                ended_ms,
            },
            SpoolEnding::InFlight => Ending::InFlight,
        };
        Ok((
            self.index,
            Finished {
                arrival_ms: self.arrival_ms,
                obs: Observation {
                    sent_ms: self.sent_ms,
                    first_token_ms: self.first_token_ms,
                    first_answer_ms: self.first_answer_ms,
                    content_chunks: self.content_chunks,
                    usage_output_tokens: self.usage_output_tokens,
                    usage_prompt_tokens: self.usage_prompt_tokens,
                    usage_reasoning_tokens: self.usage_reasoning_tokens,
                    finished: self.finished,
                    // The raw bytes stay in memory only; the label is what
                    // reaches the row.
                    error_head: None,
                    error_text: self.error_text,
                    gaps_dropped: self.gaps_dropped,
                    gaps_ms: self.gaps_ms.unwrap_or_default(),
                    last_content_ms: None,
                    server: self.server,
                    server_sources: self.server_sources,
                },
                ending,
                class: self.class,
                prompt_chars: self.prompt_chars,
                prompt_hash: self.prompt_hash,
                labels: self.labels,
            },
        ))
    }

    /// The latest instant this row proves the recorder was alive, ms.
    fn last_instant_ms(&self) -> f64 {
        let end = match self.ending {
            SpoolEnding::Completed { completed_ms } => Some(completed_ms),
            SpoolEnding::Failed { ended_ms, .. } => Some(ended_ms),
            SpoolEnding::InFlight => None,
        };
        [self.sent_ms, self.first_token_ms, self.first_answer_ms, end]
            .into_iter()
            .flatten()
            .fold(self.arrival_ms, f64::max)
    }
}

/// Appends a run's endings to its spool (the runner's [`Collector`]). The
/// first write error is kept and reported by [`SpoolWriter::finish`]; it
/// breaks the collector, so the run stops sending at once (the requests
/// already out are cut off in flight, like at an interrupt).
pub struct SpoolWriter {
    path: PathBuf,
    file: BufWriter<Box<dyn Write>>,
    error: Option<io::Error>,
    /// `first` lines carry the arrival (the header has no schedule).
    first_arrival: bool,
    /// `first` lines carry the send instant (open loop: the send lag).
    first_sent: bool,
    /// The reserve file, while it holds its room.
    reserve: Option<PathBuf>,
}

impl SpoolWriter {
    /// Creates the spool (refusing to overwrite one) and writes its header,
    /// then its reserve (none when even that does not fit: the failure is
    /// then only in the message).
    pub fn create(path: &Path, header: &Header) -> Result<SpoolWriter, SpoolError> {
        let file = Self::create_file(path)?;
        let mut writer = Self::with_writer(path, Box::new(file), header)?;
        writer.reserve = keep_room(&reserve_path(path));
        Ok(writer)
    }

    /// Creates the spool file itself, refusing to overwrite one.
    fn create_file(path: &Path) -> Result<File, SpoolError> {
        let shown = path.display().to_string();
        File::options()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|source| match source.kind() {
                io::ErrorKind::AlreadyExists => SpoolError::Exists {
                    path: shown.clone(),
                },
                _ => SpoolError::Io {
                    path: shown.clone(),
                    source,
                },
            })
    }

    /// A spool named `path` written to `writer` (the file [`create`] opened;
    /// a test's writer that fails like a full disk), its header first.
    ///
    /// [`create`]: SpoolWriter::create
    pub fn with_writer(
        path: &Path,
        writer: Box<dyn Write>,
        header: &Header,
    ) -> Result<SpoolWriter, SpoolError> {
        let shown = path.display().to_string();
        let mut file = BufWriter::with_capacity(1 << 16, writer);
        let io_err = |source| SpoolError::Io {
            path: shown.clone(),
            source,
        };
        serde_json::to_writer(&mut file, header).map_err(|e| io_err(e.into()))?;
        file.write_all(b"\n").map_err(io_err)?;
        file.flush().map_err(io_err)?;
        Ok(SpoolWriter {
            path: path.to_owned(),
            file,
            error: None,
            first_arrival: header.arrivals_ms.is_empty(),
            first_sent: header.frame.open_loop,
            reserve: None,
        })
    }

    fn append(&mut self, line: &Line) {
        if self.error.is_some() {
            return;
        }
        let result = serde_json::to_writer(&mut self.file, line)
            .map_err(io::Error::from)
            .and_then(|()| self.file.write_all(b"\n"));
        if let Err(e) = result {
            self.failed(e);
        }
    }

    /// Keeps the first error and, when the spool has a reserve, writes it
    /// into the spool in the reserve's room: what the buffer still held is
    /// dropped (it never reached the disk), a torn last line is cut back to
    /// the last whole line, and one `writeFailed` line ends the spool.
    fn failed(&mut self, error: io::Error) {
        let line = Line::WriteFailed(error.to_string());
        self.error = Some(error);
        let sink: Box<dyn Write> = Box::new(io::sink());
        let old = std::mem::replace(&mut self.file, BufWriter::new(sink));
        drop(old.into_parts());
        if let Some(reserve) = self.reserve.take() {
            let _ = std::fs::remove_file(&reserve);
            let _ = end_with_line(&self.path, &line);
        }
    }

    /// Flushes the spool; the first error of the run, if any.
    pub fn finish(mut self) -> Result<(), SpoolError> {
        let flushed = self.file.flush();
        match self.error.take().map_or(flushed, Err) {
            Ok(()) => Ok(()),
            Err(source) => Err(SpoolError::Io {
                path: self.path.display().to_string(),
                source,
            }),
        }
    }
}

impl Collector for SpoolWriter {
    fn ended(&mut self, index: usize, finished: Finished) {
        self.append(&Line::Ended(SpoolRow::of(index, &finished)));
    }

    fn first_token(&mut self, index: usize, first: FirstToken) {
        self.append(&Line::First(FirstLine {
            index,
            arrival_ms: self.first_arrival.then_some(first.arrival_ms),
            sent_ms: first.sent_ms.filter(|_| self.first_sent),
            at_ms: first.at_ms,
            answer_ms: first.answer_ms,
        }));
    }

    fn first_answer(&mut self, index: usize, at_ms: f64) {
        self.append(&Line::Answer(AnswerLine { index, at_ms }));
    }

    fn mark(&mut self, at_ms: f64, dispatched: usize) {
        self.append(&Line::Mark { at_ms, dispatched });
        self.flush();
    }

    fn end(&mut self, end: &RunEnd) {
        self.append(&Line::End(*end));
        self.flush();
    }

    fn broken(&self) -> bool {
        self.error.is_some()
    }
}

impl SpoolWriter {
    /// Hands what is buffered to the operating system, keeping the first
    /// error.
    fn flush(&mut self) {
        if self.error.is_none() {
            if let Err(e) = self.file.flush() {
                self.failed(e);
            }
        }
    }
}

impl Drop for SpoolWriter {
    /// The reserve goes with the writer: a run that ends, fails or is
    /// stopped leaves only its spool (a killed one, the reserve too, which
    /// `--recover` removes).
    fn drop(&mut self) {
        if let Some(reserve) = self.reserve.take() {
            let _ = std::fs::remove_file(reserve);
        }
    }
}

/// Creates `path` holding [`RESERVE_BYTES`]; None (and no file) when it
/// cannot.
fn keep_room(path: &Path) -> Option<PathBuf> {
    let written = File::options()
        .write(true)
        .create_new(true)
        .open(path)
        .and_then(|mut f| {
            f.write_all(&[0u8; RESERVE_BYTES])
                .and_then(|()| f.sync_data())
        });
    match written {
        Ok(()) => Some(path.to_owned()),
        Err(_) => {
            let _ = std::fs::remove_file(path);
            None
        }
    }
}

/// Cuts `spool` back to its last whole line and appends `line`.
fn end_with_line(spool: &Path, line: &Line) -> io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = File::options().read(true).write(true).open(spool)?;
    let len = file.metadata()?.len();
    let tail_len = len.min(1 << 20);
    file.seek(SeekFrom::Start(len - tail_len))?;
    let mut tail = Vec::with_capacity(tail_len as usize);
    Read::by_ref(&mut file)
        .take(tail_len)
        .read_to_end(&mut tail)?;
    let whole = match tail.iter().rposition(|&b| b == b'\n') {
        Some(i) => len - tail_len + i as u64 + 1,
        None if tail_len == len => 0,
        None => return Err(io::Error::other("no line end in the spool's last MiB")),
    };
    file.set_len(whole)?;
    file.seek(SeekFrom::Start(whole))?;
    let mut text = serde_json::to_vec(line)?;
    text.push(b'\n');
    file.write_all(&text)?;
    file.sync_data()
}

/// What one reading of a whole spool learned.
#[derive(Debug, Clone)]
pub struct Scan {
    /// The header.
    pub header: Header,
    /// The document's token mode over every spooled ending.
    pub tokens: TokenCount,
    /// The last mark: (ms since t0, requests dispatched).
    pub last_mark: Option<(f64, usize)>,
    /// Every mark, in order (a closed-loop recovery dates unended requests by them).
    pub marks: Vec<(f64, usize)>,
    /// The latest instant any line proves the recorder was alive, ms since t0.
    pub last_instant_ms: f64,
    /// Requests with an ending in the spool.
    pub ended_count: usize,
    /// One past the highest index with an ending.
    pub end_index: usize,
    /// Bytes of complete lines (a torn last line after a crash is not counted).
    pub complete_bytes: u64,
    /// How the run ended, when the spool got that far (its trace was then
    /// not written: the disk, or the recorder, failed after the run).
    pub end: Option<RunEnd>,
    ended: Vec<u64>,
    /// Endings with both the client's and the server's prompt count, and
    /// of those the ones off by more than the tokenizer rule's slack
    /// ([`goodput_core::receipt::tokenizer::row_off`]).
    pub prompt_counts: (u64, u64),
    /// The server-timing sources the ended requests' responses carried:
    /// the trace's `workload.serverTiming`.
    pub server_sources: Sources,
    /// The error that stopped the run, when its spool could not be written
    /// (the spool's `writeFailed` line).
    pub write_failed: Option<String>,
    /// The first tokens of requests without an ending, by index.
    firsts: BTreeMap<usize, SpooledFirst>,
    /// The first line the recorder could never have written, `(line, why)`:
    /// an instant past the planned horizon and its drain, a dispatch count
    /// past the schedule, an arrival that is not the schedule's. A recovery
    /// refuses the spool for it ([`Scan::refuse_impossible`]); a finishing
    /// run, whose recorder wrote the spool itself, does not ask.
    pub impossible: Option<(usize, String)>,
}

impl Scan {
    /// Whether request `index` has an ending in the spool.
    pub fn ended(&self, index: usize) -> bool {
        self.ended
            .get(index / 64)
            .is_some_and(|w| w & (1 << (index % 64)) != 0)
    }

    /// The first token of request `index`, which has no ending in the
    /// spool, if the spool holds one.
    pub fn first_token(&self, index: usize) -> Option<SpooledFirst> {
        self.firsts.get(&index).copied()
    }

    /// Requests below `rows` without an ending whose first token the spool
    /// holds.
    pub fn firsts_below(&self, rows: usize) -> usize {
        self.firsts.range(..rows).count()
    }

    /// One past the highest index of a request without an ending whose
    /// first token the spool holds (0 when none): it was dispatched.
    pub fn first_token_end(&self) -> usize {
        self.firsts.keys().next_back().map_or(0, |i| i + 1)
    }

    fn set_ended(&mut self, index: usize) -> bool {
        if self.ended.len() <= index / 64 {
            self.ended.resize(index / 64 + 1, 0);
        }
        let bit = 1u64 << (index % 64);
        let was = self.ended[index / 64] & bit != 0;
        self.ended[index / 64] |= bit;
        !was
    }
}

/// Reads complete lines of a spool; a last line without its newline (torn
/// by a crash) is dropped.
struct Lines {
    path: String,
    reader: BufReader<File>,
    buf: Vec<u8>,
    number: usize,
    bytes: u64,
}

impl Lines {
    fn open(path: &Path) -> Result<Lines, SpoolError> {
        let shown = path.display().to_string();
        let file = File::open(path).map_err(|source| SpoolError::Io {
            path: shown.clone(),
            source,
        })?;
        Ok(Lines {
            path: shown,
            reader: BufReader::with_capacity(1 << 16, file),
            buf: Vec::new(),
            number: 0,
            bytes: 0,
        })
    }

    fn bad(&self, message: impl Into<String>) -> SpoolError {
        SpoolError::Bad {
            path: self.path.clone(),
            line: self.number,
            message: message.into(),
        }
    }

    /// The next complete line, or `None` at the end.
    fn next_line(&mut self) -> Result<Option<&[u8]>, SpoolError> {
        self.buf.clear();
        let n = self
            .reader
            .read_until(b'\n', &mut self.buf)
            .map_err(|source| SpoolError::Io {
                path: self.path.clone(),
                source,
            })?;
        if n == 0 || self.buf.last() != Some(&b'\n') {
            return Ok(None);
        }
        self.number += 1;
        self.bytes += n as u64;
        Ok(Some(&self.buf[..n - 1]))
    }

    fn header(&mut self) -> Result<Header, SpoolError> {
        let Some(line) = self.next_line()?.map(<[u8]>::to_vec) else {
            return Err(SpoolError::Bad {
                path: self.path.clone(),
                line: 1,
                message: "the spool has no complete header line".into(),
            });
        };
        let header: Header = serde_json::from_slice(&line)
            .map_err(|e| self.bad(format!("not a spool header: {e}")))?;
        if header.spool != SPOOL_SCHEMA {
            return Err(self.bad(format!(
                "spool format `{}`, expected `{SPOOL_SCHEMA}`",
                header.spool
            )));
        }
        Ok(header)
    }

    fn next(&mut self) -> Result<Option<Line>, SpoolError> {
        let Some(line) = self.next_line()? else {
            return Ok(None);
        };
        match serde_json::from_slice(line) {
            Ok(parsed) => Ok(Some(parsed)),
            Err(e) => Err(self.bad(format!("not a spool line: {e}"))),
        }
    }
}

/// Reads a whole spool once: header, token mode, which requests ended, the
/// first tokens of those that did not, the marks. Refuses a request that
/// ends twice or gets a second first token, and a line it cannot read,
/// naming the line.
pub fn scan(path: &Path) -> Result<Scan, SpoolError> {
    let mut lines = Lines::open(path)?;
    let header = lines.header()?;
    let mut scan = Scan {
        header,
        tokens: TokenCount::Usage,
        last_mark: None,
        marks: Vec::new(),
        last_instant_ms: 0.0,
        ended_count: 0,
        end_index: 0,
        complete_bytes: 0,
        end: None,
        ended: Vec::new(),
        firsts: BTreeMap::new(),
        impossible: None,
        prompt_counts: (0, 0),
        server_sources: Sources::default(),
        write_failed: None,
    };
    let mut all_usage = true;
    while let Some(line) = lines.next()? {
        if scan.impossible.is_none() {
            scan.impossible = impossible_line(&scan.header, &line).map(|why| (lines.number, why));
        }
        match line {
            Line::First(first) => scan.first(first).map_err(|m| lines.bad(m.to_string()))?,
            Line::Answer(answer) => scan.answer(answer).map_err(|m| lines.bad(m.to_string()))?,
            Line::Ended(row) => {
                if matches!(row.ending, SpoolEnding::Completed { .. })
                    && row.usage_output_tokens.is_none()
                {
                    all_usage = false;
                }
                scan.end(&row).map_err(|m| lines.bad(m.to_string()))?;
                scan.count_prompt(&row);
                scan.server_sources = scan.server_sources.or(row.server_sources);
            }
            Line::Mark { at_ms, dispatched } => {
                scan.last_instant_ms = scan.last_instant_ms.max(at_ms);
                scan.last_mark = Some((at_ms, dispatched));
                scan.marks.push((at_ms, dispatched));
            }
            Line::End(end) => {
                scan.last_instant_ms = scan.last_instant_ms.max(end.at_ms);
                scan.end = Some(end);
            }
            Line::WriteFailed(why) => scan.write_failed = Some(why),
        }
    }
    scan.tokens = if all_usage {
        TokenCount::Usage
    } else {
        TokenCount::Chunks
    };
    scan.complete_bytes = lines.bytes;
    Ok(scan)
}

/// How long after the planned horizon a recorder may still write: the
/// drain of requests cut at the horizon and the final mark (milliseconds in
/// practice; a minute leaves room for a stalled machine). A line proving
/// the recorder alive later than that is not one it wrote.
pub const DRAIN_ALLOWANCE_MS: f64 = 60_000.0;

/// Why `line` is one the recorder of `header` never writes, if it is: an
/// instant past the planned horizon (window end plus grace) and
/// [`DRAIN_ALLOWANCE_MS`]; a mark counting more dispatched requests
/// (sessions) than the schedule holds; an ending or first token whose
/// arrival is not the schedule's entry for its index (open loop: the
/// recorder writes that entry itself, and a line holds the shortest decimal
/// that reads back to it, so equality is exact).
fn impossible_line(header: &Header, line: &Line) -> Option<String> {
    let frame = &header.frame;
    let horizon_ms = frame.window_end_ms + frame.grace_ms;
    let (what, at_ms) = match line {
        Line::Mark { at_ms, .. } => ("a mark", *at_ms),
        Line::First(f) => (
            "a first token",
            f.sent_ms.map_or(f.at_ms, |s| s.max(f.at_ms)),
        ),
        Line::Answer(a) => ("a first answer", a.at_ms),
        Line::Ended(row) => ("an ending", row.last_instant_ms()),
        Line::End(end) => ("the run's end", end.at_ms),
        Line::WriteFailed(_) => return None,
    };
    if at_ms > horizon_ms + DRAIN_ALLOWANCE_MS {
        return Some(format!(
            "{what} at {at_ms} ms, past the planned horizon ({horizon_ms} ms) by more than the \
             recorder's {} s drain: the recorder never writes one",
            DRAIN_ALLOWANCE_MS / 1000.0
        ));
    }
    let planned = match &header.sessions {
        Some(layout) => Some((layout.starts_ms.len(), "sessions")),
        None => frame
            .open_loop
            .then_some((header.arrivals_ms.len(), "requests")),
    };
    if let (Line::Mark { dispatched, .. }, Some((planned, unit))) = (line, planned) {
        if *dispatched > planned {
            return Some(format!(
                "a mark counts {dispatched} dispatched, but the schedule holds {planned} {unit}"
            ));
        }
    }
    if !frame.open_loop || header.sessions.is_some() {
        return None;
    }
    let (index, arrival_ms) = match line {
        Line::Ended(row) => (row.index, Some(row.arrival_ms)),
        Line::First(f) => (f.index, f.arrival_ms),
        Line::Answer(a) => (a.index, None),
        Line::Mark { .. } | Line::End(_) | Line::WriteFailed(_) => return None,
    };
    let scheduled = header.arrivals_ms.get(index)?;
    match arrival_ms {
        Some(a) if a != *scheduled => Some(format!(
            "request {index} arrives at {a} ms, but the schedule has it at {scheduled} ms"
        )),
        _ => None,
    }
}

impl Scan {
    /// Refuses the spool when a line of it is one the recorder never writes
    /// (see [`Scan::impossible`]), naming the file and the line.
    pub fn refuse_impossible(&self, path: &Path) -> Result<(), SpoolError> {
        match &self.impossible {
            Some((line, why)) => Err(SpoolError::Bad {
                path: path.display().to_string(),
                line: *line,
                message: why.clone(),
            }),
            None => Ok(()),
        }
    }
}

/// Why a spool line contradicts the lines before it (the spool's reader
/// names the file and line around it).
#[derive(Debug, thiserror::Error)]
enum LineConflict {
    /// A request's first token came twice.
    #[error("request {0} gets a first token a second time")]
    SecondFirstToken(usize),
    /// A request's first answer came without its first token, or twice.
    #[error("request {0} gets a first answer without a first token or a second time")]
    StrayAnswer(usize),
    /// A request ended twice.
    #[error("request {0} ends a second time")]
    SecondEnding(usize),
    /// A failure reason the recorder never writes.
    #[error("unknown failure reason `{0}`")]
    UnknownReason(String),
}

impl Scan {
    /// A `first` line: kept until its request's ending (a line after the
    /// ending, which the recorder never writes, would add nothing).
    fn first(&mut self, f: FirstLine) -> Result<(), LineConflict> {
        let proven = f.sent_ms.map_or(f.at_ms, |s| s.max(f.at_ms));
        self.last_instant_ms = self.last_instant_ms.max(proven);
        if self.ended(f.index) {
            return Ok(());
        }
        let seen = SpooledFirst {
            arrival_ms: f.arrival_ms,
            sent_ms: f.sent_ms,
            at_ms: f.at_ms,
            answer_ms: f.answer_ms,
        };
        match self.firsts.insert(f.index, seen) {
            None => Ok(()),
            Some(_) => Err(LineConflict::SecondFirstToken(f.index)),
        }
    }

    /// An `answer` line: the first answer of a request whose `first` line
    /// the spool holds (ignored after its ending, as a late `first` is).
    fn answer(&mut self, a: AnswerLine) -> Result<(), LineConflict> {
        self.last_instant_ms = self.last_instant_ms.max(a.at_ms);
        if self.ended(a.index) {
            return Ok(());
        }
        match self.firsts.get_mut(&a.index) {
            Some(first) if first.answer_ms.is_none() => {
                first.answer_ms = Some(a.at_ms);
                Ok(())
            }
            _ => Err(LineConflict::StrayAnswer(a.index)),
        }
    }

    /// An `ended` line.
    /// Counts an ending's client and server prompt counts for the
    /// tokenizer check.
    fn count_prompt(&mut self, row: &SpoolRow) {
        use goodput_core::receipt::tokenizer::{row_off, CLIENT_LABEL};
        if let (Some(Scalar::Number(client)), Some(server)) =
            (row.labels.get(CLIENT_LABEL), row.usage_prompt_tokens)
        {
            self.prompt_counts.0 += 1;
            if row_off(*client, server as f64) {
                self.prompt_counts.1 += 1;
            }
        }
    }

    /// Whether the trace must carry `workload.tokenizerMismatch`: its
    /// prompts were cut to client-counted tokens and most compared rows are
    /// off by the receipt's rule (docs/contract.md §10.13).
    pub fn tokenizer_mismatch(&self) -> bool {
        use goodput_core::receipt::tokenizer::{flagged, PROMPT_LENGTHS};
        let (compared, off) = self.prompt_counts;
        let tokens = matches!(
            self.header.frame.workload.get(PROMPT_LENGTHS),
            Some(Scalar::String(s)) if s == "tokens"
        );
        tokens && flagged(off, compared)
    }

    fn end(&mut self, row: &SpoolRow) -> Result<(), LineConflict> {
        if !self.set_ended(row.index) {
            return Err(LineConflict::SecondEnding(row.index));
        }
        if let SpoolEnding::Failed { reason, .. } = &row.ending {
            if parse_reason(reason).is_none() {
                return Err(LineConflict::UnknownReason(reason.clone()));
            }
        }
        self.firsts.remove(&row.index);
        self.last_instant_ms = self.last_instant_ms.max(row.last_instant_ms());
        self.ended_count += 1;
        self.end_index = self.end_index.max(row.index + 1);
        Ok(())
    }
}

/// The rows of a scanned spool in index order, `0..rows`: a request with an
/// ending gets its row as the recorder assembles it; any other gets the row
/// `unended` makes (not sent, or in flight when recovering). One pass over
/// the file; memory holds only the rows read ahead of their turn.
pub fn rows<'a>(
    path: &Path,
    scan: &'a Scan,
    rows: usize,
    unended: impl Fn(usize) -> TraceRow + 'a,
) -> Result<impl Iterator<Item = io::Result<TraceRow>> + 'a, SpoolError> {
    let mut lines = Lines::open(path)?;
    lines.header()?;
    let frame = &scan.header.frame;
    let mut ahead: BTreeMap<usize, Finished> = BTreeMap::new();
    let mut next = 0usize;
    Ok(std::iter::from_fn(move || {
        if next >= rows {
            return None;
        }
        let index = next;
        next += 1;
        if !scan.ended(index) {
            return Some(Ok(unended(index)));
        }
        loop {
            if let Some(f) = ahead.remove(&index) {
                return Some(Ok(frame.ended_row(index, &f, scan.tokens)));
            }
            match lines.next() {
                Ok(Some(Line::Ended(row))) => match row.finished() {
                    Ok((i, f)) if i >= index && i < rows => {
                        ahead.insert(i, f);
                    }
                    Ok(_) => {}
                    Err(unknown) => {
                        return Some(Err(io::Error::other(lines.bad(unknown.to_string()))))
                    }
                },
                Ok(Some(
                    Line::Mark { .. }
                    | Line::First(_)
                    | Line::Answer(_)
                    | Line::End(_)
                    | Line::WriteFailed(_),
                )) => {}
                Ok(None) => {
                    return Some(Err(io::Error::other(format!(
                        "{}: request {index} ended but its line is gone (the spool changed while it was read)",
                        lines.path
                    ))))
                }
                Err(e) => return Some(Err(io::Error::other(e))),
            }
        }
    }))
}

/// The spool header of a plan: its frame, schedule and prompts' meta.
pub fn header(plan: &Plan) -> Header {
    Header {
        spool: SPOOL_SCHEMA.to_owned(),
        frame: Frame::of(plan),
        arrivals_ms: match &plan.run.load {
            Load::Open { arrivals_ms } => arrivals_ms.as_ref().clone(),
            Load::Closed { .. } | Load::Sessions { .. } => Vec::new(),
        },
        prompts: Prompts::of(&plan.run.prompts),
        sessions: match &plan.run.load {
            Load::Sessions { set } => Some(SessionLayout {
                starts_ms: set.starts_ms.as_ref().clone(),
                offsets: set.offsets.clone(),
            }),
            _ => None,
        },
        first_tokens: true,
    }
}

/// What a trace written from a spool holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Built {
    /// Rows and bytes of the trace.
    pub written: Written,
    /// The summary's figures, counted while the rows were written.
    pub figures: Figures,
    /// What the trace's `outputTokens` count.
    pub tokens: TokenCount,
}

/// What joins the trace only once the run has ended: workload labels (the
/// metrics sidecar's sha256) and the quality sidecar's name and sha256.
#[derive(Debug, Clone, Copy)]
pub struct Ends<'a> {
    /// Joins the workload.
    pub extra: &'a Labels,
    /// The trace's `quality` member.
    pub quality: Option<&'a goodput_core::trace::QualityRef>,
}

impl<'a> Ends<'a> {
    /// Workload labels only, no quality sidecar.
    pub fn labels(extra: &'a Labels) -> Ends<'a> {
        Ends {
            extra,
            quality: None,
        }
    }
}

/// Writes the trace of a run from its spool: the document of `frame` and
/// `stop`, `rows` rows, each ended request's row as spooled, every other
/// one's row from `unended` (not sent, or in flight when recovering). The
/// trace is written atomically; the spool is left in place (the caller
/// removes it once the trace is safe). `ends` is what is only known once the
/// run has ended (the metrics sidecar's sha256, the quality sidecar).
pub fn write_trace(
    spool: &Path,
    scan: &Scan,
    stop: &Stop,
    rows: usize,
    unended: impl Fn(usize) -> TraceRow,
    out: &Path,
    ends: &Ends<'_>,
) -> Result<Built, RecordError> {
    let extra = ends.extra;
    let mut doc = scan.header.frame.envelope(stop, rows, scan.tokens);
    doc.quality = ends.quality.cloned();
    doc.workload
        .extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    if scan.tokenizer_mismatch() {
        doc.workload
            .insert("tokenizerMismatch".into(), Scalar::Bool(true));
    }
    if let Some(names) = scan.server_sources.names() {
        doc.workload
            .insert(SERVER_TIMING_LABEL.into(), Scalar::String(names));
    }
    let mut tally = Tally::default();
    let stream = self::rows(spool, scan, rows, unended)?.inspect(|row| {
        if let Ok(row) = row {
            tally.add(row);
        }
    });
    let bytes = doc
        .write_streamed_atomic(stream, out)
        .map_err(|source| RecordError::Write {
            path: out.display().to_string(),
            source,
        })?;
    let mut figures = tally.figures(scan.header.frame.open_loop);
    let header = &scan.header;
    figures.schedule = ScheduleDraw::of(
        &header.frame,
        &header.arrivals_ms,
        header.sessions.is_some(),
    );
    Ok(Built {
        written: Written {
            rows: figures.rows,
            bytes,
        },
        figures,
        tokens: scan.tokens,
    })
}

/// The trace of a finished run, from its spool (the path `record` takes;
/// the in-memory [`build_trace`](crate::build_trace) writes the same bytes
/// for the same rows).
pub fn finish_run(
    plan: &Plan,
    outcome: &RunOutcome,
    spool: &Path,
    stop: &Stop,
    ends: &Ends<'_>,
) -> Result<Built, RecordError> {
    let scan = scan(spool)?;
    let frame = &scan.header.frame;
    let unsent = |index: usize| {
        frame.unsent_row(
            index,
            outcome.arrivals_ms.get(index).copied().unwrap_or(0.0),
            &PromptMeta::of(&plan.run.prompts.prompt(index)),
        )
    };
    write_trace(spool, &scan, stop, outcome.rows, unsent, &plan.out, ends)
}
