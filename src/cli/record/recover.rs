//! `goodput record --recover SPOOL --out TRACE`: the spool of a recording
//! that died → a trace (see `record::recover` for what is claimed). Sends
//! nothing; the spool is left in place.

use std::io::Write;

use crate::cli::error::Error;
use goodput_record::output::recover::recover;
use goodput_render::record::analyze_command;

use crate::cli::exit::EXIT_OK;
use crate::cli::output::{check_output, emit};

use crate::cli::record::args::RecordArgs;

/// Recovers the spool named by `--recover` into `--out`; prints what came
/// from where.
pub fn run(args: &RecordArgs, stdout: &mut dyn Write) -> Result<i32, Error> {
    let Some(spool) = &args.recover else {
        return Err(Error::Usage("--recover needs a spool".into()));
    };
    // Written over the spool, the trace would destroy what it recovers from.
    check_output("--out", &args.out, &[spool.as_path()])?;
    let r = recover(spool, &args.out)?;
    let path = args.out.display().to_string();
    let unknown = if r.first_token_unknown > 0 {
        format!(
            "\n  the spool predates first-token lines: its {} rows without an ending say \
             firstTokenUnknown (their TTFT is not judged at the cut)",
            r.first_token_unknown
        )
    } else {
        String::new()
    };
    let text = format!(
        "recovered {} rows to {path} ({} bytes): {} from the spool as they were, \
         {} dispatched without an ending (in_flight; {} with their first token), \
         {} due but not proven sent (notSent); {}{unknown}\n  \
         the spool {} is left as it was\nnext: {}\n",
        r.built.written.rows,
        r.built.written.bytes,
        r.spooled,
        r.unended,
        r.with_first_token,
        r.not_sent,
        if r.run_ended {
            // The spool holds the run's end: nothing was cut.
            "the run had ended (only its trace was not written): its window is kept".to_owned()
        } else if let Some(why) = &r.write_failed {
            format!(
                "the run stopped when its spool could not be written ({}): window cut at {:.3} ms \
                 (workload.spoolWriteFailed)",
                goodput_util::escape::terminal(why),
                r.cut_ms
            )
        } else {
            format!("window cut at {:.3} ms", r.cut_ms)
        },
        spool.display(),
        analyze_command(&path, r.built.written.rows, r.built.written.bytes)
    );
    emit(stdout, text.as_bytes())?;
    Ok(EXIT_OK)
}
