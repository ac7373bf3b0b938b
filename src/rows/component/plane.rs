//! The first two principal components of a matrix's rows, from the same
//! sample as the first alone (see the module above): the plane a map of
//! the rows is drawn on (`report`).
//!
//! Power iteration with deflation, both estimates in one read of the
//! sample per iteration (`Sᵀ(S v)` and `Sᵀ(S w)`): the first estimate
//! iterates as the first component alone does, and the second has the
//! first's direction taken out of it before it is normalised, so it
//! converges to the top direction of what is left. The iteration stops
//! when the first has converged and the second has too, or is within the
//! noise edge (no direction of what is left stands out, so more
//! iterations would only pick among equals); when the first is within it
//! too, from [`NOISE_TEST_FROM`] on; or after [`MAX_PLANE_ITERATIONS`].

use super::sweep::{Sum, Swept, sweep};
use super::{NOISE_TEST_FROM, TOLERANCE, dot, sample_ids, unit};
use crate::aligned::Aligned;
use crate::cpu::RowBuild;
use crate::matrix::Matrix;

/// Most iterations for the plane: the second component converges more
/// slowly than the first (by the ratio of the second and third
/// variances), and a map needs its plane, not its axes to the degree.
pub(super) const MAX_PLANE_ITERATIONS: usize = 12;

/// The plane of the first two components, and how it was found.
#[derive(Debug)]
pub(crate) struct Plane {
    /// The components, the one of more variance first: orthogonal unit
    /// vectors, each signed so that its
    /// largest entry is positive (so a map comes out the same way round
    /// every time).
    pub axes: [Aligned<f32>; 2],
    /// The sample's variance along each, as a share of its total.
    pub share: [f64; 2],
    /// The mean of the sample's finite rows.
    pub mean: Aligned<f32>,
    /// The sample's finite rows, ascending.
    pub rows: Vec<usize>,
    /// Power iterations made.
    pub iterations: usize,
    /// The second component's variance is within the sample's noise
    /// level: it is one direction among many of about equal variance.
    pub within_noise: bool,
}

/// `v` signed so that its largest entry is positive.
fn oriented(mut v: Vec<f64>) -> Vec<f64> {
    let big = (v.iter()).fold(0.0f64, |b, &x| if x.abs() > b.abs() { x } else { b });
    if big < 0.0 {
        v.iter_mut().for_each(|x| *x = -*x);
    }
    v
}

/// The plane of the first two components of the mean-centred rows of
/// `m`, by power iteration with deflation over about `sample` rows (as
/// the first component alone samples them).
pub(crate) fn plane(m: &Matrix, sample: usize) -> Plane {
    let (rows, cols) = (m.rows(), m.cols());
    let build = RowBuild::detect();
    let Swept {
        sum,
        finite: ids,
        squares,
        ..
    } = sweep(build, m, &sample_ids(rows, sample), Sum::Finite(None));
    let n = ids.len().max(1) as f64;
    let mean: Vec<f64> = sum.iter().map(|s| s / n).collect();
    let total = (squares / n - dot(&mean, &mean)).max(0.0);
    // The Marchenko–Pastur edge, as the first component has it.
    let edge = total / cols as f64 * (1.0 + (cols as f64 / n).sqrt()).powi(2);
    // Fixed mixes of all axes to start from, orthogonal to each other.
    let first = unit(
        &(0..cols)
            .map(|j| 1.0 + (j % 7) as f64 * 0.1)
            .collect::<Vec<_>>(),
    );
    let second: Vec<f64> = (0..cols)
        .map(|j| (1.0 + (j % 5) as f64 * 0.1) * if j % 2 == 0 { 1.0 } else { -1.0 })
        .collect();
    let (mut v, mut w) = (first.unwrap_or_default(), second);
    let along = dot(&w, &v);
    w.iter_mut().zip(&v).for_each(|(x, y)| *x -= along * y);
    let mut w = unit(&w).unwrap_or_default();
    let (mut variance, mut iterations, mut within_noise) = ([0.0; 2], 0, false);
    while iterations < MAX_PLANE_ITERATIONS && !ids.is_empty() && !v.is_empty() {
        iterations += 1;
        let f32s = |x: &[f64]| -> Aligned<f32> { x.iter().map(|&y| y as f32).collect() };
        let (v32, w32) = (f32s(&v), f32s(&w));
        let swept = sweep(build, m, &ids, Sum::Two(&v32, &w32));
        // C x = Σ r (r·x) / n − μ (μ·x): the covariance times x.
        let cov = |s: &[f64], x: &[f64]| -> Vec<f64> {
            let mx = dot(&mean, x);
            (0..cols).map(|j| s[j] / n - mean[j] * mx).collect()
        };
        let cv = cov(&swept.sum, &v);
        let mut cw = cov(swept.along.as_deref().unwrap_or(&swept.sum), &w);
        variance = [dot(&v, &cv), dot(&w, &cw)];
        let Some(mut u) = unit(&cv) else { break };
        let along = dot(&cw, &u);
        cw.iter_mut().zip(&u).for_each(|(x, y)| *x -= along * y);
        let Some(mut z) = unit(&cw) else { break };
        // Keep the signs steady so successive estimates compare.
        for (x, old) in [(&mut u, &v), (&mut z, &w)] {
            if dot(x, old) < 0.0 {
                x.iter_mut().for_each(|y| *y = -*y);
            }
        }
        let settled = |x: &[f64], old: &[f64]| 1.0 - dot(x, old) < TOLERANCE;
        let noise = iterations >= NOISE_TEST_FROM;
        within_noise = noise && variance[1] < edge;
        let done =
            (noise && variance[0] < edge) || (settled(&u, &v) && (within_noise || settled(&z, &w)));
        (v, w) = (u, z);
        if done {
            break;
        }
    }
    let share = |x: f64| {
        if total > 0.0 {
            (x / total).clamp(0.0, 1.0)
        } else {
            0.0
        }
    };
    // Stopped at the noise edge, the estimates are two directions among
    // equals, and the second may hold more variance: the larger first.
    if variance[1] > variance[0] {
        (v, w) = (w, v);
        variance.swap(0, 1);
        within_noise = iterations >= NOISE_TEST_FROM && variance[1] < edge;
    }
    let f32s = |x: Vec<f64>| -> Aligned<f32> { x.iter().map(|&y| y as f32).collect() };
    Plane {
        axes: [f32s(oriented(v)), f32s(oriented(w))],
        share: variance.map(share),
        mean: f32s(mean),
        rows: ids,
        iterations,
        within_noise,
    }
}
