//! The first principal component of a matrix's rows (mean-centred), from
//! an evenly spread sample of them: power iteration in memory-mapped place
//! over the sample, so the full matrix is read only once afterwards (by
//! `pass`) to score every row against it.
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

use rayon::prelude::*;

use crate::aligned::Aligned;
use crate::dtype::Dtype;
use crate::matrix::Matrix;

use super::dots::{axpy, dots};
use super::row::{Bf16, Row, prefetch};
use crate::cpu::{Isa, PORTABLE_FUSES, RowBuild};

/// Rows sampled (in evenly spaced runs) for the component.
pub(crate) const SAMPLE_ROWS: usize = 4096;
/// Adjacent rows per run of the sample.
const RUN: usize = 32;
/// Most power iterations over the sample.
pub(crate) const MAX_ITERATIONS: usize = 8;
/// Convergence: `1 - v_next · v` below this ends the iteration (an angle
/// of about 0.1°).
const TOLERANCE: f64 = 2e-6;
/// Sample rows per task of a sweep.
const CHUNK: usize = 64;
/// Sample rows per tile of a task: their dot products are taken a row at
/// a time (the vector in L1 as each row streams past), then the rows are
/// added to the sums together while their bytes are still in L2, so the
/// sums (16 KiB for a 4096-wide row) are read and written once per tile,
/// not once per row.
const TILE: usize = 8;
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

/// What a sweep sums over its rows.
#[derive(Clone, Copy)]
enum Sum<'v> {
    /// The finite rows, listed, with their sum of squares; with a `v`,
    /// also `Σ r (r·v)` over them (the first iteration, in the same read).
    Finite(Option<&'v [f32]>),
    /// `Σ r (r·v)`.
    Along(&'v [f32]),
}

/// One worker's share of a sweep.
struct Acc {
    /// This chunk's sum, in f32.
    chunk: Aligned<f32>,
    /// The sum over finished chunks.
    total: Vec<f64>,
    /// This chunk's and the finished chunks' `Σ r (r·v)` in a
    /// [`Sum::Finite`] sweep with a `v` (else empty).
    chunk_along: Aligned<f32>,
    total_along: Vec<f64>,
    /// The finite rows seen ([`Sum::Finite`]).
    finite: Vec<usize>,
    /// Their sum of squares ([`Sum::Finite`]).
    squares: f64,
    buf: Vec<f32>,
}

/// Adds the rows of a tile (sample rows `ids`) into `acc` as `sum` says:
/// each row's dot products first, a row at a time (`ask(k)` asks for row
/// `k`'s bytes early, the next one's while row `k − 1` is read), then
/// their sums into the accumulators, all rows at once.
#[inline(always)]
fn tile_work<const FMA: bool, T: Row>(
    rows: &[T],
    ids: &[usize],
    sum: Sum,
    acc: &mut Acc,
    ask: impl Fn(usize),
) {
    // The rows added (the finite ones, for `Sum::Finite`), and their `r·v`.
    let (mut kept, mut along, mut n) = ([rows[0]; TILE], [0f32; TILE], 0);
    for (k, (&r, &i)) in rows.iter().zip(ids).enumerate() {
        ask(k + 1);
        match sum {
            Sum::Along(v) => {
                (kept[n], along[n]) = (r, dots::<FMA, 1>(r, [v]).1[0]);
                n += 1;
            }
            Sum::Finite(v) => {
                // `r·r` is the same bits with or without `r·v` (see `dots`).
                let (sq, d) = match v {
                    Some(v) => {
                        let (sq, [d]) = dots::<FMA, 1>(r, [v]);
                        (sq, d)
                    }
                    None => (dots::<FMA, 0>(r, []).0, 0.0),
                };
                if sq.is_finite() {
                    (kept[n], along[n]) = (r, d);
                    n += 1;
                    acc.finite.push(i);
                    acc.squares += f64::from(sq);
                }
            }
        }
    }
    match sum {
        Sum::Along(_) => axpy::<FMA, _>(&mut acc.chunk, &along[..n], &kept[..n]),
        Sum::Finite(v) => {
            axpy::<FMA, _>(&mut acc.chunk, &[1.0; TILE][..n], &kept[..n]);
            if v.is_some() {
                axpy::<FMA, _>(&mut acc.chunk_along, &along[..n], &kept[..n]);
            }
        }
    }
}

#[inline(always)]
fn chunk_body<const FMA: bool>(m: &Matrix, ids: &[usize], sum: Sum, acc: &mut Acc) {
    acc.chunk.fill(0.0);
    acc.chunk_along.fill(0.0);
    let cols = m.cols();
    for (t, tile) in ids.chunks(TILE).enumerate() {
        if m.dtype() == Dtype::BF16 {
            let rows: [Bf16; TILE] =
                std::array::from_fn(|k| Bf16(m.row_bytes(tile.get(k).copied().unwrap_or(tile[0]))));
            // Rows may start a run afresh: ask for the next one early.
            let ask = |k: usize| prefetch(ids.get(t * TILE + k).map(|&i| m.row_bytes(i)));
            tile_work::<FMA, _>(&rows[..tile.len()], tile, sum, acc, ask);
        } else {
            let mut buf = std::mem::take(&mut acc.buf);
            buf.resize(TILE * cols, 0.0);
            for (&i, row) in tile.iter().zip(buf.chunks_exact_mut(cols)) {
                m.block_into(i..i + 1, row);
            }
            let rows: [&[f32]; TILE] = std::array::from_fn(|k| &buf[k * cols..(k + 1) * cols]);
            tile_work::<FMA, _>(&rows[..tile.len()], tile, sum, acc, |_| {});
            acc.buf = buf;
        }
    }
    for (t, c) in acc.total.iter_mut().zip(&acc.chunk) {
        *t += f64::from(*c);
    }
    for (t, c) in acc.total_along.iter_mut().zip(&acc.chunk_along) {
        *t += f64::from(*c);
    }
}

/// [`chunk_body`] compiled for AVX-512, with fused multiply-adds.
///
/// # Safety
/// The CPU must have AVX-512F and BW, and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,fma")]
unsafe fn chunk_avx512(m: &Matrix, ids: &[usize], sum: Sum, acc: &mut Acc) {
    chunk_body::<true>(m, ids, sum, acc);
}

/// [`chunk_body`] compiled for AVX2, with fused multiply-adds.
///
/// # Safety
/// The CPU must have AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn chunk_avx2(m: &Matrix, ids: &[usize], sum: Sum, acc: &mut Acc) {
    chunk_body::<true>(m, ids, sum, acc);
}

/// What a sweep found.
struct Swept {
    /// `Σ r (r·v)` ([`Sum::Along`]), or the sum of the finite rows.
    sum: Vec<f64>,
    /// [`Sum::Finite`] with a `v`: `Σ r (r·v)` over the finite rows.
    along: Option<Vec<f64>>,
    /// [`Sum::Finite`]: the finite rows (sorted).
    finite: Vec<usize>,
    /// [`Sum::Finite`]: their sum of squares.
    squares: f64,
}

/// The sums `sum` asks for over the rows `ids` of `m`.
fn sweep(build: RowBuild, m: &Matrix, ids: &[usize], sum: Sum) -> Swept {
    let cols = m.cols();
    let along_cols = match sum {
        Sum::Finite(Some(_)) => cols,
        _ => 0,
    };
    let acc = ids
        .par_chunks(CHUNK)
        .fold(
            || Acc {
                chunk: Aligned::zeros(cols),
                total: vec![0.0; cols],
                chunk_along: Aligned::zeros(along_cols),
                total_along: vec![0.0; along_cols],
                finite: Vec::new(),
                squares: 0.0,
                buf: Vec::new(),
            },
            |mut acc, chunk| {
                match build.isa() {
                    // SAFETY: a `RowBuild` runs only on a CPU with its
                    // instructions.
                    #[cfg(target_arch = "x86_64")]
                    Isa::Avx512 => unsafe { chunk_avx512(m, chunk, sum, &mut acc) },
                    // SAFETY: as above.
                    #[cfg(target_arch = "x86_64")]
                    Isa::Avx2 => unsafe { chunk_avx2(m, chunk, sum, &mut acc) },
                    _ => chunk_body::<PORTABLE_FUSES>(m, chunk, sum, &mut acc),
                }
                acc
            },
        )
        .reduce_with(|mut a, b| {
            a.total.iter_mut().zip(&b.total).for_each(|(x, y)| *x += y);
            (a.total_along.iter_mut())
                .zip(&b.total_along)
                .for_each(|(x, y)| *x += y);
            a.finite.extend(b.finite);
            a.squares += b.squares;
            a
        });
    match acc {
        Some(mut acc) => {
            acc.finite.sort_unstable();
            Swept {
                sum: acc.total,
                along: (along_cols > 0).then_some(acc.total_along),
                finite: acc.finite,
                squares: acc.squares,
            }
        }
        None => Swept {
            sum: vec![0.0; cols],
            along: (along_cols > 0).then(|| vec![0.0; cols]),
            finite: Vec::new(),
            squares: 0.0,
        },
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_matrix(values: &[f32], rows: usize, cols: usize) -> Vec<u8> {
        assert_eq!(values.len(), rows * cols);
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    /// A small deterministic pseudo-random value in [-0.5, 0.5).
    fn noise(i: usize) -> f32 {
        // The splitmix64 finaliser.
        let mut x = (i as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^= x >> 31;
        (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }

    #[test]
    fn component_of_a_known_spread() {
        // Rows spread along (3, 4, 0)/5 around an offset, with a little
        // noise across: the component is that axis (up to sign).
        let (rows, cols) = (300, 3);
        let mut values = Vec::new();
        for i in 0..rows {
            let t = (i as f32 - 150.0) / 10.0;
            values.extend([5.0 + 0.6 * t, -2.0 + 0.8 * t, 1.0 + noise(i) / 10.0]);
        }
        let bytes = f32_matrix(&values, rows, cols);
        let m = Matrix::new("t", &bytes, Dtype::F32, &[rows, cols]).unwrap();
        let c = sampled(&m, SAMPLE_ROWS);
        let along = (c.v[0] * 0.6 + c.v[1] * 0.8).abs();
        assert!(along > 0.9999, "{:?}", c.v);
        assert_eq!(c.rows, rows);
        // Converged, not stopped at the cap.
        assert!(c.iterations < MAX_ITERATIONS, "{} iterations", c.iterations);
    }

    #[test]
    fn sampled_component_agrees_with_the_full_one() {
        // 40,000 BF16 rows of 64 values: noise of spread 1 in every axis
        // plus a spread of 3 along a fixed direction (a spectral gap of
        // 9 : 1 in variance), around an offset, and a few NaN rows. The
        // component from 4,096 of them agrees with the one from all.
        let (rows, cols) = (40_000, 64);
        let dir: Vec<f32> = (0..cols).map(|j| 1.0 + (j % 5) as f32).collect();
        let len = dir.iter().map(|x| x * x).sum::<f32>().sqrt();
        let mut values = Vec::with_capacity(rows * cols);
        for i in 0..rows {
            let t = 3.0 * 3.4 * noise(i * 7919 + 1);
            for (j, d) in dir.iter().enumerate() {
                let e = 3.4 * noise(i * cols + j);
                values.push(if i % 997 == 5 {
                    f32::NAN
                } else {
                    0.5 + e + t * d / len
                });
            }
        }
        let bytes: Vec<u8> = values
            .iter()
            .flat_map(|&v| half::bf16::from_f32(v).to_le_bytes())
            .collect();
        let m = Matrix::new("t", &bytes, Dtype::BF16, &[rows, cols]).unwrap();
        let full = sampled(&m, rows);
        let part = sampled(&m, SAMPLE_ROWS);
        assert_eq!(full.rows, rows - rows.div_ceil(997));
        // Runs of 32 rows every 320 (10 × 32: ⌈40,000 / 4,096⌉ = 10), the
        // NaN ones left out.
        let ids = sample_ids(rows, SAMPLE_ROWS);
        assert_eq!((ids.len(), ids[31], ids[32]), (4000, 31, 320));
        let finite = ids.iter().filter(|&i| i % 997 != 5).count();
        assert_eq!(part.rows, finite);
        let cos: f32 = full.v.iter().zip(&part.v).map(|(a, b)| a * b).sum();
        assert!(cos.abs() > 0.99, "cosine {cos}");
        let truth: f32 = full.v.iter().zip(&dir).map(|(a, b)| a * b / len).sum();
        assert!(
            truth.abs() > 0.99,
            "cosine to the planted direction {truth}"
        );
    }

    #[test]
    fn noise_stops_at_the_noise_test_and_a_gap_does_not() {
        // 2,000 rows of 64 values of even spread: no direction stands out.
        let (rows, cols) = (2000, 64);
        let values: Vec<f32> = (0..rows * cols).map(noise).collect();
        let bytes = f32_matrix(&values, rows, cols);
        let m = Matrix::new("t", &bytes, Dtype::F32, &[rows, cols]).unwrap();
        let c = sampled(&m, SAMPLE_ROWS);
        assert!(c.within_noise);
        assert_eq!(c.iterations, NOISE_TEST_FROM);
        // The same rows plus a spread of 3 along one axis stand out.
        let tilted: Vec<f32> = values
            .iter()
            .enumerate()
            .map(|(k, &x)| if k % cols == 5 { 3.0 * x } else { x })
            .collect();
        let bytes = f32_matrix(&tilted, rows, cols);
        let m = Matrix::new("t", &bytes, Dtype::F32, &[rows, cols]).unwrap();
        let c = sampled(&m, SAMPLE_ROWS);
        assert!(!c.within_noise);
        assert!(c.v[5].abs() > 0.99, "{:?}", c.v);
    }

    #[test]
    fn small_matrices_are_sampled_whole() {
        assert_eq!(sample_ids(100, SAMPLE_ROWS), (0..100).collect::<Vec<_>>());
        assert_eq!(sample_ids(4096, SAMPLE_ROWS).len(), 4096);
        // Llama 3's 128,256 rows: runs of 32 every 1,024 rows.
        let ids = sample_ids(128_256, SAMPLE_ROWS);
        assert_eq!(
            (ids.len(), ids[32], ids[ids.len() - 1]),
            (4032, 1024, 128_031)
        );
    }

    #[test]
    fn the_first_sweep_makes_the_first_iteration_bit_for_bit() {
        // 300 rows of 40 values over several chunks, BF16 and F32, every
        // row finite: the first sweep's `Σ r (r·v)` is the one a sweep of
        // its own makes, to the bit (so the component is unchanged).
        let (rows, cols) = (300, 40);
        let values: Vec<f32> = (0..rows * cols).map(|i| noise(i) * 3.0).collect();
        let v: Vec<f32> = (0..cols).map(|j| noise(j + 7919)).collect();
        let ids: Vec<usize> = (0..rows).collect();
        let bf16: Vec<u8> = values
            .iter()
            .flat_map(|&x| half::bf16::from_f32(x).to_le_bytes())
            .collect();
        let f32s = f32_matrix(&values, rows, cols);
        for (dtype, bytes) in [(Dtype::BF16, &bf16), (Dtype::F32, &f32s)] {
            let m = Matrix::new("t", bytes, dtype, &[rows, cols]).unwrap();
            for build in RowBuild::tested() {
                let first = sweep(build, &m, &ids, Sum::Finite(Some(&v)));
                let own = sweep(build, &m, &ids, Sum::Along(&v));
                let bits = |x: &[f64]| x.iter().map(|y| y.to_bits()).collect::<Vec<_>>();
                assert_eq!(first.finite.len(), rows, "{dtype}");
                assert_eq!(bits(&first.along.unwrap()), bits(&own.sum), "{dtype}");
                let plain = sweep(build, &m, &ids, Sum::Finite(None));
                assert_eq!(bits(&first.sum), bits(&plain.sum), "{dtype}");
                assert_eq!(first.squares.to_bits(), plain.squares.to_bits());
            }
        }
    }

    #[test]
    fn no_finite_rows_give_an_axis() {
        let values = [f32::NAN; 6];
        let bytes = f32_matrix(&values, 3, 2);
        let m = Matrix::new("t", &bytes, Dtype::F32, &[3, 2]).unwrap();
        let c = sampled(&m, SAMPLE_ROWS);
        assert_eq!((&c.v[..], c.rows, c.iterations), (&[1.0, 0.0][..], 0, 0));
        assert!(!c.within_noise);
    }
}
