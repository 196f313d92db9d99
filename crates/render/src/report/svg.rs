//! SVG primitives of the charts: coordinates, clipped labels and axis ticks.

/// A coordinate with one decimal.
pub(super) fn px(x: f64) -> String {
    format!("{x:.1}")
}

/// Shortens a trace string for a label (the tooltip keeps it whole).
pub(super) fn clip(s: &str, keep: usize) -> String {
    if s.chars().count() <= keep {
        s.to_owned()
    } else {
        let mut head: String = s.chars().take(keep.saturating_sub(1)).collect();
        head.push('…');
        head
    }
}

/// 1, 2 or 5 × a power of ten, at least `raw`.
pub(super) fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= raw {
            return m * p;
        }
    }
    10.0 * p
}

/// Tick values in `[lo, hi]`, about `target` of them, at most 40.
pub(super) fn ticks(lo: f64, hi: f64, target: f64) -> Vec<f64> {
    let step = nice_step((hi - lo) / target);
    let mut out = Vec::new();
    let mut k = (lo / step).ceil();
    while k * step <= hi + step * 1e-9 && out.len() < 40 {
        out.push(k * step);
        k += 1.0;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(1.5), 2.0);
        assert_eq!(nice_step(3.0), 5.0);
        assert_eq!(nice_step(7.0), 10.0);
        assert_eq!(nice_step(0.0), 1.0);
        assert_eq!(ticks(0.0, 10.0, 5.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
    }
}
