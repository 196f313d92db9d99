//! Shares and limits for people, with as many digits as their meaning needs.
//!
//! Rounding to a fixed number of places can change what a figure says: a
//! pass share of 0.9996 printed with one decimal reads `100.0 %` (no
//! request lost), a failure share of 0.050040 against a 5 % ceiling reads
//! `5.00 % <= 5.00 % FAIL`, and a pass share of 0.8996 beside a 90 % target
//! reads `90.0 %`. Every text view (the text summary, the HTML report,
//! `gate`, `frontier`) shows such figures through this one module, which
//! starts from the usual number of decimals and adds digits until:
//!
//! - a share that is not exactly 1 does not read 100 %, and one that is not
//!   exactly 0 does not read 0 % (likewise for a limit);
//! - a figure and the limit (or target) it is compared with read in the
//!   same order as their values: never equal unless they are equal, never
//!   crossed.
//!
//! Digits stop at [`MAX_DECIMALS`]; two distinct doubles closer than that
//! (which no count-based share is) keep the last form tried.

/// The most decimals a figure is given.
pub const MAX_DECIMALS: usize = 12;

/// `x` with `decimals` places.
fn fixed(x: f64, decimals: usize) -> String {
    format!("{x:.decimals$}")
}

/// The value a shown text stands for.
fn shown(text: &str) -> f64 {
    text.parse().unwrap_or(f64::NAN)
}

/// Whether `text` (showing `x`) claims an exact 0 or 100 (%) that `x` is not:
/// the bounds a share can reach.
fn false_bound(x: f64, text: &str, scale: f64) -> bool {
    let v = shown(text);
    (v == 0.0 && x != 0.0) || (scale == 100.0 && v == 100.0 && x != 1.0)
}

/// Whether the shown pair keeps the order of the values.
fn keeps_order(x: f64, limit: f64, x_text: &str, limit_text: &str) -> bool {
    let (a, b) = (shown(x_text), shown(limit_text));
    match x.partial_cmp(&limit) {
        Some(std::cmp::Ordering::Less) => a < b,
        Some(std::cmp::Ordering::Greater) => a > b,
        _ => true,
    }
}

/// The fewest decimals, at least `min`, with which `x × scale` (and
/// `limit × scale`, when given) keep their meaning.
fn decimals(x: f64, limit: Option<f64>, min: usize, scale: f64) -> usize {
    (min..=MAX_DECIMALS.max(min))
        .find(|&d| {
            let x_text = fixed(x * scale, d);
            if false_bound(x, &x_text, scale) {
                return false;
            }
            limit.is_none_or(|l| {
                let l_text = fixed(l * scale, d);
                !false_bound(l, &l_text, scale) && keeps_order(x, l, &x_text, &l_text)
            })
        })
        .unwrap_or(MAX_DECIMALS.max(min))
}

/// A share (0 to 1) as a percentage with at least `min` decimals:
/// `percent(0.25, 1)` is `25.0 %`, `percent(0.9996, 1)` is `99.96 %`
/// (never `100.0 %`), `percent(0.0004, 1)` is `0.04 %`.
pub fn percent(share: f64, min: usize) -> String {
    let d = decimals(share, None, min, 100.0);
    format!("{} %", fixed(share * 100.0, d))
}

/// An optional share (`—` when there is none, e.g. an empty cohort).
pub fn percent_or_dash(share: Option<f64>, min: usize) -> String {
    share.map_or_else(|| "—".to_owned(), |s| percent(s, min))
}

/// A share and the limit it is compared with, both as percentages with the
/// same number of decimals (at least `min`), in the order of their values:
/// `(0.050040, 0.05, 2)` gives `5.004 %` and `5.000 %`.
pub fn percent_against(share: f64, limit: f64, min: usize) -> (String, String) {
    let d = decimals(share, Some(limit), min, 100.0);
    (
        format!("{} %", fixed(share * 100.0, d)),
        format!("{} %", fixed(limit * 100.0, d)),
    )
}

/// A share shown beside a target written in its shortest form (`90 %`):
/// the share with at least `min` decimals, never reading as the target (or
/// past it) unless it is equal. `(0.8996, 0.9, 1)` gives `89.96 %`.
pub fn percent_beside(share: f64, target: f64, min: usize) -> String {
    let d = decimals(share, Some(target), min, 100.0);
    format!("{} %", fixed(share * 100.0, d))
}

/// A share in a sentence: at most one decimal, trailing zeros dropped
/// (`90 %`, `57.9 %`), with more digits when it would otherwise read 100 %
/// or 0 % untruly, or (given `target`) read as the target or past it:
/// `(0.8996, Some(0.9))` gives `89.96 %`, `(0.9999, None)` `99.99 %`.
pub fn percent_short(share: f64, target: Option<f64>) -> String {
    let d = decimals(share, target, 1, 100.0);
    let text = fixed(share * 100.0, d);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} %")
}

/// A number and the limit it is compared with, each with the same number
/// of decimals (at least `min`) unless it is whole (then plainly: `3100`),
/// in the order of their values: `(0.4999, 0.5, 3)` gives `0.4999` and
/// `0.5000`.
pub fn number_against(x: f64, limit: f64, min: usize) -> (String, String) {
    let d = decimals(x, Some(limit), min, 1.0);
    let show = |v: f64| {
        if v.fract() == 0.0 && v.abs() < 1e15 {
            fixed(v, 0)
        } else {
            fixed(v, d)
        }
    };
    (show(x), show(limit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_keep_the_usual_decimals_when_they_say_the_truth() {
        assert_eq!(percent(0.25, 1), "25.0 %");
        assert_eq!(percent(1.0, 1), "100.0 %");
        assert_eq!(percent(0.0, 1), "0.0 %");
        assert_eq!(percent(0.579, 1), "57.9 %");
        assert_eq!(percent_or_dash(None, 1), "—");
    }

    #[test]
    fn a_share_near_a_bound_gets_the_digits_that_keep_it_off_the_bound() {
        // 0.9996 × 100 = 99.96: one decimal rounds to 100.0, two do not.
        assert_eq!(percent(0.9996, 1), "99.96 %");
        assert_eq!(percent(0.0004, 1), "0.04 %");
        // 1 of 1,000,000 failed: 0.0001 %.
        assert_eq!(percent(0.000001, 1), "0.0001 %");
        assert_eq!(percent(0.99999, 1), "99.999 %");
    }

    #[test]
    fn a_failing_share_never_reads_equal_to_its_limit() {
        assert_eq!(
            percent_against(0.050040, 0.05, 2),
            ("5.004 %".to_owned(), "5.000 %".to_owned())
        );
        // Below the limit, also kept apart: 4.996 % < 5.000 %.
        assert_eq!(
            percent_against(0.049960, 0.05, 2),
            ("4.996 %".to_owned(), "5.000 %".to_owned())
        );
        // Equal values read equal.
        assert_eq!(
            percent_against(0.05, 0.05, 2),
            ("5.00 %".to_owned(), "5.00 %".to_owned())
        );
        // Far apart: the usual digits.
        assert_eq!(
            percent_against(0.2, 0.05, 2),
            ("20.00 %".to_owned(), "5.00 %".to_owned())
        );
    }

    #[test]
    fn a_share_beside_its_target_never_rounds_onto_it() {
        assert_eq!(percent_beside(0.8996, 0.9, 1), "89.96 %");
        assert_eq!(percent_beside(0.9004, 0.9, 1), "90.04 %");
        assert_eq!(percent_beside(0.9, 0.9, 1), "90.0 %");
        assert_eq!(percent_beside(0.85, 0.9, 1), "85.0 %");
    }

    #[test]
    fn shares_in_sentences_are_short_unless_that_changes_their_meaning() {
        assert_eq!(percent_short(0.9, None), "90 %");
        assert_eq!(percent_short(0.579, Some(0.9)), "57.9 %");
        assert_eq!(percent_short(0.8996, Some(0.9)), "89.96 %");
        assert_eq!(percent_short(0.9999, None), "99.99 %");
        assert_eq!(percent_short(1.0, None), "100 %");
        assert_eq!(percent_short(0.0, Some(0.9)), "0 %");
    }

    #[test]
    fn numbers_keep_their_order_against_a_limit() {
        assert_eq!(
            number_against(0.4999, 0.5, 3),
            ("0.4999".to_owned(), "0.5000".to_owned())
        );
        assert_eq!(
            number_against(1.8, 1.8, 3),
            ("1.800".to_owned(), "1.800".to_owned())
        );
        assert_eq!(
            number_against(3100.0, 3000.0, 3),
            ("3100".to_owned(), "3000".to_owned())
        );
        assert_eq!(
            number_against(1200.25, 1200.0, 3),
            ("1200.250".to_owned(), "1200".to_owned())
        );
    }
}
