//! The indicators of `undertrained` from the per-row sums of a pass (see
//! `pass`): norms, distances to the reference mean, and cosines to it with
//! the first principal component removed; and the reference mean itself,
//! read from the few reference rows directly.

use super::pass::RowSums;

/// Per-row indicators; `None` when not computed.
#[derive(Default)]
pub(super) struct Indicators {
    pub head_cosine: Option<Vec<f32>>,
    pub head_norm: Option<Vec<f32>>,
    pub embed_norm: Option<Vec<f32>>,
    pub embed_distance: Option<Vec<f32>>,
}

fn sq(v: &[f32]) -> f64 {
    v.iter().map(|&x| f64::from(x) * f64::from(x)).sum()
}

/// The L2 norm of every row.
pub(super) fn norms(a: &RowSums) -> Vec<f32> {
    a.sq.iter().map(|&s| s.sqrt()).collect()
}

/// The Euclidean distance of every row to `mean`.
pub(super) fn distances(a: &RowSums, mean: &[f32]) -> Vec<f32> {
    let mm = sq(mean);
    a.sq.iter()
        .zip(&a.dot_ref)
        .map(|(&s, &d)| (f64::from(s) - 2.0 * f64::from(d) + mm).max(0.0).sqrt() as f32)
        .collect()
}

/// Cosines to the reference mean with the component removed from both
/// (the component's direction: `pc` need not be a unit vector, as after
/// rounding); `None` when the mean lies along the component (nothing is
/// left).
pub(super) fn cosines(r: &RowSums, pc: &[f32], mean: &[f32]) -> Option<Vec<f32>> {
    // With `pc` scaled to unit length, `r·c` becomes `r·pc / |pc|`.
    let scale = sq(pc).sqrt().recip();
    if !scale.is_finite() {
        return None;
    }
    let mc: f64 = mean
        .iter()
        .zip(pc)
        .map(|(&x, &c)| f64::from(x) * f64::from(c))
        .sum::<f64>()
        * scale;
    let mm = sq(mean);
    let rest = (mm - mc * mc).max(0.0);
    if rest <= mm * 1e-10 || rest == 0.0 {
        return None;
    }
    let rest = rest.sqrt();
    Some(
        (0..r.sq.len())
            .map(|i| {
                let (s, d, c) = (
                    f64::from(r.sq[i]),
                    f64::from(r.dot_ref[i]),
                    f64::from(r.dot_pc[i]) * scale,
                );
                let len = (s - c * c).max(0.0).sqrt();
                if len > 0.0 {
                    ((d - c * mc) / (len * rest)) as f32
                } else if s.is_nan() {
                    f32::NAN
                } else {
                    0.0
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosines_take_the_component_as_a_direction() {
        // Rows (3, 4, 0), (1, 0, 1) and (0, 0, 0); the mean (1, 1, 1); the
        // component along x, as a unit vector and at 2.5 times its length.
        let sums = |c: f32| RowSums {
            sq: vec![25.0, 2.0, 0.0],
            dot_ref: vec![7.0, 2.0, 0.0],
            dot_pc: vec![3.0 * c, c, 0.0],
            pending: Vec::new(),
        };
        let mean = [1.0, 1.0, 1.0];
        let unit = cosines(&sums(1.0), &[1.0, 0.0, 0.0], &mean).unwrap();
        // (0, 4, 0) and (0, 0, 1) against (0, 1, 1).
        let half = std::f32::consts::FRAC_1_SQRT_2;
        assert_eq!(unit, [half, half, 0.0]);
        let long = cosines(&sums(2.5), &[2.5, 0.0, 0.0], &mean).unwrap();
        assert_eq!(long, unit);
        assert!(cosines(&sums(0.0), &[0.0; 3], &mean).is_none());
    }
}
