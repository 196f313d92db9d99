//! The mutation check for a person: one block per mutation, then the tally.

use std::fmt::Write;

use goodput_core::review::mutate::{MutationReport, Status};

/// Renders a mutation report.
pub fn render(report: &MutationReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "MUTATION CHECK (docs/contract.md §8)  trace sha256 {}",
        report.trace_sha256
    );
    for note in &report.notes {
        let _ = writeln!(o, "note: {note}");
    }
    for m in &report.mutations {
        let _ = writeln!(o, "\n{:<15} {}", m.name, m.status.label());
        let _ = writeln!(o, "  mutation:  {}", m.mutation);
        let _ = writeln!(o, "  predicted: {}", m.predicted);
        if let Some(observed) = &m.observed {
            let _ = writeln!(o, "  observed:  {observed}");
        }
        if let Some(why) = &m.why_not_applicable {
            let _ = writeln!(o, "  why:       {why}");
        }
    }
    let applicable = report.caught + report.not_caught;
    let _ = writeln!(
        o,
        "\n{} of {} applicable mutations caught; {} NOT CAUGHT; {} not applicable",
        report.caught, applicable, report.not_caught, report.not_applicable
    );
    let verdict = if !report.passed() {
        "FAIL: the receipt did not move as predicted; the counting or reporting path is wrong"
    } else if applicable == 0 {
        "PASS (vacuous): no mutation applies to this trace, so it cannot exercise the counting path"
    } else {
        "PASS: every applicable mutation moved the receipt as predicted"
    };
    let _ = writeln!(o, "{verdict}");
    debug_assert!(report
        .mutations
        .iter()
        .all(|m| (m.status == Status::NotApplicable) == m.observed.is_none()));
    // The net under the per-string escaping: no raw control byte leaves.
    goodput_util::escape::terminal_lines(&o).into_owned()
}
