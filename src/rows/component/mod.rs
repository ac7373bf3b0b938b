//! The first principal component of a matrix's rows (mean-centred), from
//! an evenly spread sample of them: power iteration in memory-mapped place
//! over the sample, so the full matrix is read only once afterwards (by
//! `undertrained`'s pass) to score every row against it. The first two
//! together, for a map of the rows, in `plane`.
//!
//! The sample is [`SAMPLE_ROWS`] rows in runs of [`RUN`] adjacent rows,
//! the runs evenly spaced (all rows of a smaller matrix, where the
//! component is exact): 1/32 of Llama 3's head. Runs, not single rows far
//! apart, because the memory system streams a run ahead of the reads but
//! waits out its full latency for each row that starts afresh. Each
//! iteration reads the sample once for `Sᵀ(S v)` (the first one in the
//! same read as the sum of the rows for their mean, which it needs only
//! afterwards), accumulated in f32
//! within a chunk of rows and f64 across chunks, on all cores; BF16 rows
//! are decoded in registers (see `rows::row`), nothing the size of the
//! sample is copied. A component with a spectral gap is found to within a
//! fraction of a degree by the sample in a few iterations (tested below:
//! each one shrinks the error by the ratio of the top two variances).
//!
//! Without a gap there is no single direction to find. A sample of `n`
//! rows of `d` values whose variance is spread evenly has, by chance, top
//! directions of up to `(1 + √(d/n))²` times the mean variance per
//! direction (the Marchenko–Pastur edge), and a matrix whose own top
//! direction stands out less than that shows none in its sample (the
//! BBP transition). So when, from iteration [`NOISE_TEST_FROM`] on, the
//! variance along the current estimate is still below that edge, the
//! iteration stops: the sample cannot tell the direction from noise, and
//! more iterations would only pick among directions of about equal
//! variance (`within_noise` says so). Otherwise it stops at
//! [`MAX_ITERATIONS`].

mod plane;
mod sweep;
#[cfg(test)]
mod tests;

pub(crate) use plane::{Plane, plane};

use crate::aligned::Aligned;
use crate::cpu::RowBuild;
use crate::matrix::Matrix;
use sweep::{Sum, Swept, sweep};

/// Rows sampled (in evenly spaced runs) for the component.
pub(crate) const SAMPLE_ROWS: usize = 4096;
/// Adjacent rows per run of the sample.
const RUN: usize = 32;
/// Most power iterations over the sample.
pub(crate) const MAX_ITERATIONS: usize = 8;
/// Convergence: `1 - v_next · v` below this ends the iteration (an angle
/// of about 0.1°).
const TOLERANCE: f64 = 2e-6;
/// The first iteration whose estimate is tested against the noise edge
/// (earlier ones may still be far from the top direction).
const NOISE_TEST_FROM: usize = 3;

/// The component and how it was found.
#[derive(Debug)]
pub(crate) struct Component {
    /// Unit vector (up to sign): a unit axis when the sample has no spread.
    pub v: Aligned<f32>,
    /// Finite rows in the sample.
    pub rows: usize,
    /// Power iterations made.
    pub iterations: usize,
    /// The sample's top variance is within its noise level: no direction
    /// stands out (see the module docs).
    pub within_noise: bool,
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// `v / |v|`, or `None` for a zero or non-finite vector.
fn unit(v: &[f64]) -> Option<Vec<f64>> {
    let n = dot(v, v).sqrt();
    (n > 0.0 && n.is_finite()).then(|| v.iter().map(|x| x / n).collect())
}

/// The rows of the sample: about `sample` of `rows`, in runs of [`RUN`]
/// adjacent rows, evenly spaced; all rows when there are `sample` or fewer.
fn sample_ids(rows: usize, sample: usize) -> Vec<usize> {
    let step = rows.div_ceil(sample.max(1)).max(1);
    (0..rows)
        .step_by(step * RUN)
        .flat_map(|start| start..(start + RUN).min(rows))
        .collect()
}

/// The first principal component of the mean-centred rows of `m`, by
/// power iteration over about `sample` rows (see [`sample_ids`]).
pub(crate) fn sampled(m: &Matrix, sample: usize) -> Component {
    let (rows, cols) = (m.rows(), m.cols());
    let build = RowBuild::detect();
    let sampled = sample_ids(rows, sample);
    let mut axis = vec![0.0; cols];
    axis[0] = 1.0;
    // Start from a fixed mix of all axes, not one the rows may miss.
    let start: Vec<f64> = (0..cols).map(|j| 1.0 + (j % 7) as f64 * 0.1).collect();
    let mut v = unit(&start).unwrap_or(axis.clone());
    // The first sweep also makes the first iteration's `Σ r (r·v)`: it
    // needs the sample's mean only afterwards.
    let v32: Aligned<f32> = v.iter().map(|&x| x as f32).collect();
    let Swept {
        sum,
        along,
        finite: ids,
        squares,
    } = sweep(build, m, &sampled, Sum::Finite(Some(&v32)));
    // Over the finite rows, in the chunks an iteration makes: only when
    // every sampled row is finite (else the first iteration sweeps again).
    let mut first = along.filter(|_| ids.len() == sampled.len());
    let n = ids.len() as f64;
    let done = |v: Vec<f64>, iterations, within_noise| Component {
        v: v.iter().map(|&x| x as f32).collect(),
        rows: ids.len(),
        iterations,
        within_noise,
    };
    let mean: Vec<f64> = sum.iter().map(|s| s / n.max(1.0)).collect();
    // The Marchenko–Pastur edge of the sample: the top variance evenly
    // spread rows reach by chance (see the module docs).
    let spread = (squares / n.max(1.0) - dot(&mean, &mean)).max(0.0) / cols as f64;
    let edge = spread * (1.0 + (cols as f64 / n.max(1.0)).sqrt()).powi(2);
    for it in 1..=MAX_ITERATIONS {
        if ids.is_empty() {
            return done(axis, 0, false);
        }
        let mtmv = match first.take() {
            Some(mtmv) => mtmv,
            None => {
                let v32: Aligned<f32> = v.iter().map(|&x| x as f32).collect();
                sweep(build, m, &ids, Sum::Along(&v32)).sum
            }
        };
        let mv = dot(&mean, &v);
        // C v = Σ r (r·v) / n − μ (μ·v): the covariance times v.
        let w: Vec<f64> = (0..cols).map(|j| mtmv[j] / n - mean[j] * mv).collect();
        let Some(mut u) = unit(&w) else {
            return done(axis, it, false);
        };
        // v·Cv: the variance along the estimate.
        if it >= NOISE_TEST_FROM && dot(&v, &w) < edge {
            return done(u, it, true);
        }
        // Keep the sign steady so successive estimates compare.
        if dot(&u, &v) < 0.0 {
            u.iter_mut().for_each(|x| *x = -*x);
        }
        let converged = 1.0 - dot(&u, &v) < TOLERANCE;
        v = u;
        if converged {
            return done(v, it, false);
        }
    }
    done(v, MAX_ITERATIONS, false)
}
