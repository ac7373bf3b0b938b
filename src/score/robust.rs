//! From indicators to one score per row: each indicator becomes a robust
//! z-score (distance from the median of all rows in units of 1.4826 × the
//! median absolute deviation), oriented so that positive means "looks
//! untrained"; the combined score is the mean of a row's z-scores. Also
//! the order of rows by score, and the histogram of the combined score.

use serde::Serialize;

use crate::median::median_of;

/// Rows scoring at least this are strong candidates: this many robust
/// standard deviations beyond the median row, on the mean of the
/// indicators. A normal distribution puts about 3 rows in 10 million there.
pub const STRONG: f64 = 5.0;

/// Smallest robust deviation used, so that near-constant indicators (rows
/// normalised to one length) do not turn rounding noise into scores.
const MIN_SIGMA: f64 = 0.01;

/// Which way an indicator points to an untrained row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    /// Higher is more suspicious (cosine to the reference mean).
    High,
    /// Lower is more suspicious, on a log scale (norms, distances).
    LowLog,
}

/// Oriented robust z-scores of `values`; NaN stays NaN. On the log scale a
/// zero becomes a thousandth of the median positive value.
pub(crate) fn robust_z(values: &[f32], dir: Direction) -> Vec<f64> {
    let finite = || {
        values
            .iter()
            .filter(|x| x.is_finite())
            .map(|&x| f64::from(x))
    };
    if finite().next().is_none() {
        return vec![f64::NAN; values.len()];
    }
    // On the log scale, the value a zero (or less) counts as.
    let floor = (dir == Direction::LowLog).then(|| log_floor(finite()));
    let transform = |x: f64| floor.map_or(x, |floor| -(x.max(floor)).ln());
    // Each value transformed once (a logarithm each, on the log scale).
    let mut z: Vec<f64> = values
        .iter()
        .map(|&x| {
            if x.is_finite() {
                transform(f64::from(x))
            } else {
                f64::NAN
            }
        })
        .collect();
    // The medians of the finite ones, then of their deviations.
    let finite_z = || z.iter().copied().filter(|x| !x.is_nan());
    let med = median_of(finite_z()).expect("a finite value");
    let dev = median_of(finite_z().map(|x| (x - med).abs())).expect("a finite value");
    let sigma = (1.4826 * dev).max(MIN_SIGMA);
    z.iter_mut().for_each(|x| *x = (*x - med) / sigma);
    z
}

/// The least value on the log scale, below which values count as it: a
/// thousandth of the median positive one (of the finite `values`). When
/// every value is positive and at least a thousandth of the largest, no
/// value is below that (the median is no larger than the largest), and 0
/// is returned instead: it leaves them as they are too, and spares
/// finding the median.
fn log_floor(values: impl Iterator<Item = f64> + Clone) -> f64 {
    let (lo, hi) = values
        .clone()
        .fold((f64::INFINITY, 0f64), |(lo, hi), x| (lo.min(x), hi.max(x)));
    if lo > 0.0 && lo >= hi * 1e-3 {
        return 0.0;
    }
    median_of(values.filter(|&x| x > 0.0)).map_or(1e-30, |m| m * 1e-3)
}

/// The mean of each row's finite z-scores over `zs` (`rows` each); NaN
/// when none is. Made in the first indicator's memory (fresh memory costs
/// a page fault per 4 KiB).
pub(crate) fn combine(mut zs: Vec<Vec<f64>>, rows: usize) -> Vec<f64> {
    let Some((first, rest)) = zs.split_first_mut() else {
        return vec![f64::NAN; rows];
    };
    for (i, x) in first.iter_mut().enumerate() {
        let (sum, n) = std::iter::once(*x)
            .chain(rest.iter().map(|z| z[i]))
            .filter(|x| x.is_finite())
            .fold((0.0, 0), |(s, n), x| (s + x, n + 1));
        *x = if n == 0 { f64::NAN } else { sum / n as f64 };
    }
    zs.swap_remove(0)
}

/// The order of row ids by their combined `scores`: best first, ties to
/// the lower id.
pub(crate) fn best_first(scores: &[f64]) -> impl Fn(&u32, &u32) -> std::cmp::Ordering + Copy + '_ {
    |a: &u32, b: &u32| {
        scores[*b as usize]
            .total_cmp(&scores[*a as usize])
            .then(a.cmp(b))
    }
}

/// Counts of the combined score in equal bins from `min` to `max`.
#[derive(Debug, Clone, Serialize)]
pub struct Histogram {
    /// Lower edge of the first bin (the lowest score).
    pub min: f64,
    /// Upper edge of the last bin (the highest score).
    pub max: f64,
    /// Rows per bin.
    pub counts: Vec<u64>,
}

impl Histogram {
    /// The bin holding `score`, clamped to the ends.
    pub fn bin_of(&self, score: f64) -> usize {
        let n = self.counts.len();
        if n == 0 || self.max <= self.min {
            return 0;
        }
        let f = (score - self.min) / (self.max - self.min) * n as f64;
        (f.max(0.0) as usize).min(n - 1)
    }
}

/// The histogram of the finite `scores` in `bins` bins.
pub(crate) fn histogram(scores: &[f64], bins: usize) -> Histogram {
    let finite = scores.iter().copied().filter(|x| x.is_finite());
    let (min, max) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
        (lo.min(x), hi.max(x))
    });
    if min > max {
        return Histogram {
            min: 0.0,
            max: 0.0,
            counts: Vec::new(),
        };
    }
    let mut h = Histogram {
        min,
        max,
        counts: vec![0; bins],
    };
    for &s in scores.iter().filter(|x| x.is_finite()) {
        let b = h.bin_of(s);
        h.counts[b] += 1;
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn z_scores_are_oriented() {
        let norms: Vec<f32> = (0..101).map(|i| 1.0 + (i % 10) as f32 * 0.01).collect();
        let mut with = norms.clone();
        with.extend([0.1, 10.0, 0.0, f32::NAN]);
        let z = robust_z(&with, Direction::LowLog);
        assert!(z[101] > 20.0, "a small norm scores high: {}", z[101]);
        assert!(z[102] < -20.0, "a large norm scores low: {}", z[102]);
        assert!(z[103] > z[101], "zero is the most suspicious");
        assert!(z[104].is_nan());
        assert!(z[..101].iter().all(|x| x.abs() < 3.0));
        let cos = [0.0f32, 0.1, -0.1, 0.05, -0.05, 0.9];
        let z = robust_z(&cos, Direction::High);
        assert!(z[5] > 5.0 && z[2] < 0.0, "{z:?}");
    }

    #[test]
    fn values_below_the_log_floor_count_as_it() {
        // The median positive value is 1.5: the floor is 0.0015.
        let values = [0.0f32, 0.0005, 0.002, 1.0, 2.0, 3.0, 4.0];
        let floor = log_floor(values.iter().map(|&x| f64::from(x)));
        assert!((floor - 0.0015).abs() < 1e-12, "{floor}");
        let z = robust_z(&values, Direction::LowLog);
        assert_eq!(z[0], z[1]);
        assert!(z[1] > z[2] && z[2] > z[3]);
        // Nothing below a thousandth of the largest: nothing is raised,
        // and the median is not needed.
        let spread = [0.0078125f32, 1.0, 4.0];
        assert_eq!(log_floor(spread.iter().map(|&x| f64::from(x))), 0.0);
        let z = robust_z(&spread, Direction::LowLog);
        // -ln of each, whose median is 0 and deviations' median ln 4.
        let log_z = |x: f64| -x.ln() / (1.4826 * 4f64.ln());
        assert!((z[0] - log_z(0.0078125)).abs() < 1e-12, "{z:?}");
        assert!((z[2] - log_z(4.0)).abs() < 1e-12, "{z:?}");
    }

    #[test]
    fn combined_is_the_mean_of_finite_scores() {
        let zs = vec![vec![1.0, f64::NAN, f64::NAN], vec![3.0, 4.0, f64::NAN]];
        let c = combine(zs, 3);
        assert_eq!(c[..2], [2.0, 4.0]);
        assert!(c[2].is_nan());
        let one = combine(vec![vec![-1.5, f64::INFINITY, f64::NAN, -0.0]], 4);
        assert_eq!(one[0], -1.5);
        assert!(one[1].is_nan() && one[2].is_nan());
        // `0.0 + x`, as for several.
        assert_eq!(one[3].to_bits(), 0.0f64.to_bits());
        assert!(combine(Vec::new(), 2).iter().all(|x| x.is_nan()));
    }

    #[test]
    fn histogram_bins() {
        let h = histogram(&[0.0, 1.0, 2.0, 10.0, f64::NAN], 5);
        assert_eq!(h.counts, vec![2, 1, 0, 0, 1]);
        assert_eq!((h.min, h.max), (0.0, 10.0));
        assert_eq!(h.bin_of(5.0), 2);
        assert_eq!(h.bin_of(99.0), 4);
        assert!(histogram(&[f64::NAN], 5).counts.is_empty());
    }
}
