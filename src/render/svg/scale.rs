//! Scales from data to pixels, linear or logarithmic, with ticks at round
//! values (1, 2 or 5 times a power of ten; powers of ten on a log scale)
//! and tick labels that say no more digits than the steps need.

/// A map from a data interval onto a pixel interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    lo: f64,
    hi: f64,
    log: bool,
    from: f64,
    to: f64,
}

impl Scale {
    /// `lo..=hi` onto the pixels `from..=to` (`to` below `from` for a y
    /// axis, which points down). An empty or reversed interval is widened
    /// around its value, so that a constant still has a place.
    pub fn linear(lo: f64, hi: f64, from: f64, to: f64) -> Scale {
        let (lo, hi) = widened(lo, hi);
        Scale {
            lo,
            hi,
            log: false,
            from,
            to,
        }
    }

    /// As [`Scale::linear`] on a log scale; `lo` is raised to a positive
    /// value below `hi` when it is not one.
    pub fn log(lo: f64, hi: f64, from: f64, to: f64) -> Scale {
        let hi = if hi > 0.0 && hi.is_finite() { hi } else { 1.0 };
        let lo = if lo > 0.0 && lo < hi { lo } else { hi / 10.0 };
        Scale {
            lo,
            hi,
            log: true,
            from,
            to,
        }
    }

    /// The pixel of `v` (values outside the interval fall outside the
    /// pixels; non-positive ones on a log scale at its low end).
    pub fn at(&self, v: f64) -> f64 {
        let f = |x: f64| if self.log { x.max(self.lo).log10() } else { x };
        let t = (f(v) - f(self.lo)) / (f(self.hi) - f(self.lo));
        self.from + t * (self.to - self.from)
    }

    /// Ticks inside the interval with their labels: at most about `max`
    /// round values on a linear scale, powers of ten (with 2 and 5 times
    /// them across less than two decades) on a log scale.
    pub fn ticks(&self, max: usize) -> Vec<(f64, String)> {
        if self.log {
            return log_ticks(self.lo, self.hi)
                .into_iter()
                .map(|v| (v, compact(v)))
                .collect();
        }
        let step = step_for(self.hi - self.lo, max.max(1));
        let first = (self.lo / step).ceil() as i64;
        let last = (self.hi / step + 1e-9).floor() as i64;
        (first..=last)
            .map(|k| {
                let v = k as f64 * step;
                (v, label(v, step))
            })
            .collect()
    }
}

/// `lo..hi`, widened when empty or not finite.
fn widened(lo: f64, hi: f64) -> (f64, f64) {
    let (lo, hi) = match (lo.is_finite(), hi.is_finite()) {
        (true, true) => (lo, hi),
        (true, false) => (lo, lo),
        (false, true) => (hi, hi),
        (false, false) => (0.0, 1.0),
    };
    if hi > lo {
        (lo, hi)
    } else {
        let pad = if lo == 0.0 { 0.5 } else { lo.abs() * 0.1 };
        (lo - pad, lo + pad)
    }
}

/// The round step (1, 2 or 5 × 10ᵏ) that cuts `span` into at most about
/// `max` pieces.
fn step_for(span: f64, max: usize) -> f64 {
    let raw = span / max as f64;
    let power = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|&s| s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * power)
}

/// Powers of ten from `lo` to `hi`; across less than two decades, 2 and 5
/// times them as well.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (a, b) = (lo.log10().ceil() as i32, (hi.log10() + 1e-9).floor() as i32);
    let few = hi / lo < 100.0;
    let mut ticks = Vec::new();
    for e in (a - 1)..=b {
        for m in [1.0, 2.0, 5.0] {
            let v = m * 10f64.powi(e);
            if (m == 1.0 || few) && v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9) {
                ticks.push(v);
            }
        }
    }
    ticks
}

/// `v` with the decimals a tick `step` needs (`0.25` for steps of 0.05,
/// `-1` for steps of 1), or compact from 10,000 on.
pub fn label(v: f64, step: f64) -> String {
    if v.abs() >= 1e4 {
        return compact(v);
    }
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    let s = format!("{v:.decimals$}");
    // `-0.0` is 0.
    if s.trim_start_matches('-')
        .chars()
        .all(|c| c == '0' || c == '.')
    {
        s.trim_start_matches('-').to_string()
    } else {
        s
    }
}

/// A count or size in at most three significant digits with an SI suffix:
/// `950`, `1.5k`, `12k`, `3.2M`, `1G`.
pub fn compact(v: f64) -> String {
    let a = v.abs();
    let (div, suffix) = match a {
        _ if a >= 1e12 => (1e12, "T"),
        _ if a >= 1e9 => (1e9, "G"),
        _ if a >= 1e6 => (1e6, "M"),
        _ if a >= 1e3 => (1e3, "k"),
        _ => (1.0, ""),
    };
    let x = v / div;
    let s = if x.abs() >= 100.0 || x.fract() == 0.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    format!("{s}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(s: &Scale, max: usize) -> Vec<String> {
        s.ticks(max).into_iter().map(|(_, l)| l).collect()
    }

    #[test]
    fn linear_ticks_are_round_and_inside() {
        let s = Scale::linear(-0.13, 1.0, 0.0, 100.0);
        assert_eq!(values(&s, 6), ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]);
        assert_eq!(
            values(&Scale::linear(0.0, 7.0, 0.0, 1.0), 4),
            ["0", "2", "4", "6"]
        );
        assert_eq!(
            values(&Scale::linear(0.0, 50_000.0, 0.0, 1.0), 5),
            ["0", "10k", "20k", "30k", "40k", "50k"]
        );
        assert_eq!(s.at(-0.13), 0.0);
        assert_eq!(s.at(1.0), 100.0);
    }

    #[test]
    fn empty_intervals_widen() {
        let s = Scale::linear(3.0, 3.0, 0.0, 10.0);
        assert_eq!((s.at(2.7), s.at(3.3)), (0.0, 10.0));
        assert_eq!(s.at(3.0), 5.0);
        let nan = Scale::linear(f64::NAN, f64::NAN, 0.0, 1.0);
        assert_eq!((nan.at(0.0), nan.at(1.0)), (0.0, 1.0));
    }

    #[test]
    fn log_ticks_are_decades_or_steps_within_them() {
        let s = Scale::log(0.5, 200_000.0, 100.0, 0.0);
        assert_eq!(values(&s, 0), ["1", "10", "100", "1k", "10k", "100k"]);
        assert_eq!(
            values(&Scale::log(0.7, 30.0, 0.0, 1.0), 0),
            ["1", "2", "5", "10", "20"]
        );
        assert_eq!(s.at(200_000.0), 0.0);
        assert_eq!(s.at(0.0), 100.0);
        let zero = Scale::log(0.0, 0.0, 0.0, 1.0);
        assert_eq!((zero.at(0.1), zero.at(1.0)), (0.0, 1.0));
    }

    #[test]
    fn compact_numbers() {
        for (v, want) in [
            (950.0, "950"),
            (1500.0, "1.5k"),
            (12_000.0, "12k"),
            (128_256.0, "128k"),
            (3.2e6, "3.2M"),
            (1e9, "1G"),
            (0.25, "0.25"),
        ] {
            assert_eq!(compact(v), want, "{v}");
        }
        assert_eq!(label(-0.0, 0.1), "0.0");
        assert_eq!(label(0.30000000000000004, 0.1), "0.3");
    }
}
