//! The indicators of an untrained row (Land & Bartolo 2024), from the
//! per-row sums of a pass over a matrix (`|r|²`, `r·m` with the reference
//! mean, `r·c` with the first principal component): norms, distances to
//! the reference mean, and cosines to it with the component removed; and
//! which of them the combined score averages, as robust z-scores (see
//! `robust`). `undertrained` scores every indicator it has, `check` the
//! embedding's, in the same way.

use rayon::prelude::*;

use super::robust::{Direction, combine, robust_z};

/// Per-row indicators; `None` when not computed.
#[derive(Debug, Default)]
pub(crate) struct Indicators {
    /// The head's cosine to the reference mean, component removed.
    pub head_cosine: Option<Vec<f32>>,
    /// The head's L2 norm (a separately stored head).
    pub head_norm: Option<Vec<f32>>,
    /// The embedding's L2 norm.
    pub embed_norm: Option<Vec<f32>>,
    /// The embedding's distance to the reference mean.
    pub embed_distance: Option<Vec<f32>>,
}

impl Indicators {
    /// The names of the indicators the score averages, and every row's
    /// combined score (the mean of its finite z-scores; NaN without any),
    /// `rows` of them: the head cosine and the embedding distance when
    /// there is a reference, else the norms (of the head and of the
    /// embedding).
    pub(crate) fn scores(&self, rows: usize) -> (Vec<&'static str>, Vec<f64>) {
        let (names, zs) = self.z_scores();
        (names, combine(zs, rows))
    }

    /// The indicators [`Indicators::scores`] averages, with their z-scores.
    fn z_scores(&self) -> (Vec<&'static str>, Vec<Vec<f64>>) {
        let with_reference = self.head_cosine.is_some() || self.embed_distance.is_some();
        let candidates: [(&'static str, &Option<Vec<f32>>, Direction, bool); 4] = [
            (
                "head_cosine",
                &self.head_cosine,
                Direction::High,
                with_reference,
            ),
            (
                "head_norm",
                &self.head_norm,
                Direction::LowLog,
                !with_reference,
            ),
            (
                "embed_distance",
                &self.embed_distance,
                Direction::LowLog,
                with_reference,
            ),
            (
                "embed_norm",
                &self.embed_norm,
                Direction::LowLog,
                !with_reference,
            ),
        ];
        // One indicator per core: each takes a few medians of every row.
        candidates
            .into_par_iter()
            .filter_map(|(name, values, dir, wanted)| {
                let values = values.as_ref().filter(|_| wanted)?;
                Some((name, robust_z(values, dir)))
            })
            .unzip()
    }
}

fn sq_norm(v: &[f32]) -> f64 {
    v.iter().map(|&x| f64::from(x) * f64::from(x)).sum()
}

/// The L2 norm of every row, from its `|r|²`.
pub(crate) fn norms(sq: &[f32]) -> Vec<f32> {
    sq.iter().map(|&s| s.sqrt()).collect()
}

/// The Euclidean distance of every row to `mean`, from its `|r|²` and
/// `r·m` (`dot_ref`).
pub(crate) fn distances(sq: &[f32], dot_ref: &[f32], mean: &[f32]) -> Vec<f32> {
    let mm = sq_norm(mean);
    sq.iter()
        .zip(dot_ref)
        .map(|(&s, &d)| (f64::from(s) - 2.0 * f64::from(d) + mm).max(0.0).sqrt() as f32)
        .collect()
}

/// Cosines to the reference mean with the component removed from both
/// (the component's direction: `pc` need not be a unit vector, as after
/// rounding); `None` when the mean lies along the component (nothing is
/// left). From every row's `|r|²`, `r·m` (`dot_ref`) and `r·pc` (`dot_pc`).
pub(crate) fn cosines(
    sq: &[f32],
    dot_ref: &[f32],
    dot_pc: &[f32],
    pc: &[f32],
    mean: &[f32],
) -> Option<Vec<f32>> {
    // With `pc` scaled to unit length, `r·c` becomes `r·pc / |pc|`.
    let scale = sq_norm(pc).sqrt().recip();
    if !scale.is_finite() {
        return None;
    }
    let mc: f64 = mean
        .iter()
        .zip(pc)
        .map(|(&x, &c)| f64::from(x) * f64::from(c))
        .sum::<f64>()
        * scale;
    let mm = sq_norm(mean);
    let rest = (mm - mc * mc).max(0.0);
    if rest <= mm * 1e-10 || rest == 0.0 {
        return None;
    }
    let rest = rest.sqrt();
    Some(
        (0..sq.len())
            .map(|i| {
                let (s, d, c) = (
                    f64::from(sq[i]),
                    f64::from(dot_ref[i]),
                    f64::from(dot_pc[i]) * scale,
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
        let (sq, dot_ref) = ([25.0, 2.0, 0.0], [7.0, 2.0, 0.0]);
        let mean = [1.0, 1.0, 1.0];
        let cosines = |c: f32, pc: &[f32]| cosines(&sq, &dot_ref, &[3.0 * c, c, 0.0], pc, &mean);
        let unit = cosines(1.0, &[1.0, 0.0, 0.0]).unwrap();
        // (0, 4, 0) and (0, 0, 1) against (0, 1, 1).
        let half = std::f32::consts::FRAC_1_SQRT_2;
        assert_eq!(unit, [half, half, 0.0]);
        let long = cosines(2.5, &[2.5, 0.0, 0.0]).unwrap();
        assert_eq!(long, unit);
        assert!(cosines(0.0, &[0.0; 3]).is_none());
    }
}
