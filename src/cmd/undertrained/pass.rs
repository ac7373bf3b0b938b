//! The streaming passes of `undertrained` over one matrix: per-row sums
//! (`|r|²`, `r·m` against the reference mean, `r·v` against the current
//! principal-component estimate) and, when asked, the power-iteration
//! product `Mᵀ M v` with the row sum, all through [`search::scan`].
//!
//! BF16 rows are read in place (see `kernel`), other dtypes converted to
//! f32 a block at a time. `|r|²` and `r·m` do not change between passes:
//! the first computes them, later ones only `r·v`. The row sum and
//! `Mᵀ (M v)` are accumulated in f32 within a block and added into
//! per-worker f64 vectors between blocks, so nothing the size of the matrix
//! is ever allocated beyond three f32 per row. The block work is compiled
//! twice: for AVX-512 with fused multiply-adds (chosen at run time) and
//! portable.

use crate::dtype::Dtype;
use crate::matrix::Matrix;
use crate::progress::Progress;
use crate::search;

use super::kernel::{Bf16, PREFETCH_ROWS, Row, axpy, dot1, dot3, prefetch};

/// Rows sampled (evenly spaced) for the first estimate of the component.
const SAMPLE_ROWS: usize = 256;
/// Power iterations on the in-memory sample.
const SAMPLE_ITERATIONS: usize = 50;
/// Most streaming passes of power iteration.
pub(crate) const MAX_PASSES: usize = 6;
/// Convergence: `1 - |v_next · v|` below this ends the iteration (an angle
/// of about 0.1°).
const TOLERANCE: f64 = 2e-6;

/// Per-row sums from the last pass over a matrix.
#[derive(Debug, Default)]
pub(crate) struct RowSums {
    /// `|r|²` of every row (NaN for rows holding NaN or Inf).
    pub sq: Vec<f32>,
    /// `r · m` with the reference mean (0 without one).
    pub dot_ref: Vec<f32>,
    /// `r · c` with the first principal component (0 without one).
    pub dot_pc: Vec<f32>,
}

/// What the passes over one matrix found.
#[derive(Debug)]
pub(crate) struct Analysis {
    /// Per-row sums.
    pub rows: RowSums,
    /// The first principal component (unit length), when computed.
    pub pc: Option<Vec<f32>>,
    /// Streaming passes made.
    pub passes: usize,
}

/// One worker's share of a pass.
struct Part {
    blocks: Vec<(usize, Vec<[f32; 3]>)>,
    sum: Vec<f64>,
    mtmv: Vec<f64>,
    finite: u64,
    buf: Vec<f32>,
    acc_sum: Vec<f32>,
    acc_w: Vec<f32>,
}

impl Part {
    fn new(cols: usize, wants: Wants) -> Part {
        let len = |on: bool| if on { cols } else { 0 };
        Part {
            blocks: Vec::new(),
            sum: vec![0.0; len(wants.sum)],
            mtmv: vec![0.0; len(wants.power)],
            finite: 0,
            buf: Vec::new(),
            acc_sum: vec![0.0; len(wants.sum)],
            acc_w: vec![0.0; len(wants.power)],
        }
    }

    fn merge(mut self, other: Part) -> Part {
        self.blocks.extend(other.blocks);
        for (a, b) in self.sum.iter_mut().zip(&other.sum) {
            *a += b;
        }
        for (a, b) in self.mtmv.iter_mut().zip(&other.mtmv) {
            *a += b;
        }
        self.finite += other.finite;
        self
    }
}

/// The result of one pass.
struct Pass {
    rows: RowSums,
    /// Sum of the finite rows.
    sum: Vec<f64>,
    /// `Σ r (r·v)` over the finite rows (empty without `v`).
    mtmv: Vec<f64>,
    /// Number of finite rows.
    finite: u64,
}

/// The work on one row: its sums (or only `r·v` when `known`), and its
/// share of the row sum and of `Σ r (r·v)`. `None` for a non-finite row.
#[inline(always)]
fn row_work<const FMA: bool>(
    r: impl Row,
    known: Option<f32>,
    reference: &[f32],
    v: &[f32],
    wants: Wants<'_>,
    acc_sum: &mut [f32],
    acc_w: &mut [f32],
) -> Option<[f32; 3]> {
    let d = match known {
        Some(sq) if sq.is_finite() => [0.0, 0.0, dot1::<FMA>(r, v)],
        Some(_) => return None,
        None => dot3::<FMA>(r, reference, v),
    };
    if !d[0].is_finite() {
        return None;
    }
    if wants.sum {
        axpy::<FMA>(acc_sum, 1.0, r);
    }
    if wants.power {
        axpy::<FMA>(acc_w, d[2], r);
    }
    Some(d)
}

/// What a pass computes besides `r·v` per row.
#[derive(Clone, Copy)]
struct Wants<'a> {
    /// The sum of the rows.
    sum: bool,
    /// `Σ r (r·v)`.
    power: bool,
    /// `|r|²` of every row from an earlier pass: when given, `|r|²` and
    /// `r·m` (which do not change between passes) are not computed again
    /// (they read 0), and rows whose `|r|²` is not finite are left out.
    known: Option<&'a [f32]>,
}

/// One block: `raw` holds whole BF16 rows, read in place (decoded in
/// registers, so the decoding shares the wide instructions); other dtypes
/// are already decoded in `p.buf`. Pushes the block's per-row sums and adds into the accumulators.
#[inline(always)]
fn block_body<const FMA: bool>(
    p: &mut Part,
    first: usize,
    raw: Option<&[u8]>,
    reference: &[f32],
    v: &[f32],
    wants: Wants<'_>,
) {
    let cols = reference.len();
    p.acc_sum.fill(0.0);
    p.acc_w.fill(0.0);
    let n = raw.map_or(p.buf.len(), |raw| raw.len() / 2) / cols;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let known = wants.known.map(|sq| sq[first + i]);
        let (acc_sum, acc_w) = (&mut p.acc_sum, &mut p.acc_w);
        let d = match raw {
            Some(raw) => {
                let bytes = |i: usize| raw.get(i * cols * 2..(i + 1) * cols * 2);
                prefetch(bytes(i + PREFETCH_ROWS));
                let r = Bf16(bytes(i).expect("whole rows"));
                row_work::<FMA>(r, known, reference, v, wants, acc_sum, acc_w)
            }
            None => {
                let r = &p.buf[i * cols..(i + 1) * cols];
                row_work::<FMA>(r, known, reference, v, wants, acc_sum, acc_w)
            }
        };
        match d {
            Some(d) => {
                out.push(d);
                p.finite += 1;
            }
            None => out.push([f32::NAN; 3]),
        }
    }
    for (s, a) in p.sum.iter_mut().zip(&p.acc_sum) {
        *s += f64::from(*a);
    }
    for (s, a) in p.mtmv.iter_mut().zip(&p.acc_w) {
        *s += f64::from(*a);
    }
    p.blocks.push((first, out));
}

/// [`block_body`] compiled for AVX-512, with fused multiply-adds.
///
/// # Safety
/// The CPU must have AVX-512F (which implies FMA).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
unsafe fn block_avx512(
    p: &mut Part,
    first: usize,
    raw: Option<&[u8]>,
    reference: &[f32],
    v: &[f32],
    wants: Wants<'_>,
) {
    block_body::<true>(p, first, raw, reference, v, wants);
}

/// [`block_body`] on the widest instructions the CPU has: AVX-512 when
/// `wide`, else the portable build.
fn block(
    wide: bool,
    p: &mut Part,
    first: usize,
    raw: Option<&[u8]>,
    reference: &[f32],
    v: &[f32],
    wants: Wants<'_>,
) {
    #[cfg(target_arch = "x86_64")]
    if wide {
        // SAFETY: `wide` is only true when the CPU has AVX-512F (see `pass`).
        return unsafe { block_avx512(p, first, raw, reference, v, wants) };
    }
    let _ = wide;
    block_body::<false>(p, first, raw, reference, v, wants);
}

/// Whether the AVX-512 build of the block work can run here.
fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    return is_x86_feature_detected!("avx512f");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// One streaming pass: per-row sums against `reference` and `v` (zeros
/// stand in for a missing one), and what `wants` asks.
fn pass(m: &Matrix, reference: &[f32], v: &[f32], wants: Wants<'_>, progress: &Progress) -> Pass {
    pass_with(has_avx512(), m, reference, v, wants, progress)
}

/// [`pass`] on the AVX-512 build or not, so tests can compare the two.
fn pass_with(
    wide: bool,
    m: &Matrix,
    reference: &[f32],
    v: &[f32],
    wants: Wants<'_>,
    progress: &Progress,
) -> Pass {
    let cols = m.cols();
    let row_bytes = m.row_len_bytes();
    let bf16 = m.dtype() == Dtype::BF16;
    let mut part = search::scan(
        m,
        progress,
        || Part::new(cols, wants),
        |p: &mut Part, first: usize, raw: &[u8]| {
            if !bf16 {
                let n = raw.len() / row_bytes;
                p.buf.resize(n * cols, 0.0);
                m.block_into(first..first + n, &mut p.buf);
            }
            block(wide, p, first, bf16.then_some(raw), reference, v, wants);
        },
        Part::merge,
    );
    progress.finish();
    part.blocks.sort_by_key(|b| b.0);
    let mut rows = RowSums::default();
    for (_, block) in part.blocks {
        for [sq, dr, dv] in block {
            rows.sq.push(sq);
            rows.dot_ref.push(dr);
            rows.dot_pc.push(dv);
        }
    }
    Pass {
        rows,
        sum: part.sum,
        mtmv: part.mtmv,
        finite: part.finite,
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

/// A first estimate of the component from [`SAMPLE_ROWS`] evenly spaced
/// finite rows, centred, by power iteration in memory; a unit vector along
/// the first axis when the sample has no spread.
fn sample_start(m: &Matrix) -> Vec<f64> {
    let (rows, cols) = (m.rows(), m.cols());
    let step = rows.div_ceil(SAMPLE_ROWS).max(1);
    let sample: Vec<Vec<f64>> = (0..rows)
        .step_by(step)
        .map(|i| m.row(i).into_iter().map(f64::from).collect::<Vec<f64>>())
        .filter(|r| r.iter().all(|x| x.is_finite()))
        .collect();
    let mut fallback = vec![0.0; cols];
    fallback[0] = 1.0;
    if sample.is_empty() {
        return fallback;
    }
    let mut mean = vec![0.0; cols];
    for r in &sample {
        for (a, x) in mean.iter_mut().zip(r) {
            *a += x / sample.len() as f64;
        }
    }
    let centred: Vec<Vec<f64>> = sample
        .iter()
        .map(|r| r.iter().zip(&mean).map(|(x, m)| x - m).collect())
        .collect();
    // Start from a fixed mix of all axes, not one the sample may miss.
    let mut v: Vec<f64> = (0..cols).map(|j| 1.0 + (j % 7) as f64 * 0.1).collect();
    for _ in 0..SAMPLE_ITERATIONS {
        let mut w = vec![0.0; cols];
        for r in &centred {
            let y = dot(r, &v);
            for (a, x) in w.iter_mut().zip(r) {
                *a += y * x;
            }
        }
        match unit(&w) {
            Some(u) => v = u,
            None => return fallback,
        }
    }
    v
}

/// Reads `m` once for per-row sums against `reference` (no component).
pub(crate) fn sums(m: &Matrix, reference: Option<&[f32]>, progress: &Progress) -> Analysis {
    let zeros = vec![0.0; m.cols()];
    let wants = Wants {
        sum: false,
        power: false,
        known: None,
    };
    let p = pass(m, reference.unwrap_or(&zeros), &zeros, wants, progress);
    Analysis {
        rows: p.rows,
        pc: None,
        passes: 1,
    }
}

/// Finds the first principal component of the (mean-centred) rows of `m`
/// by power iteration, one streaming pass per iteration, and returns the
/// per-row sums of the last pass, whose `r·v` is taken against the
/// component returned. `progress(k)` makes the bar of pass `k` (from 1).
pub(crate) fn with_component(
    m: &Matrix,
    reference: &[f32],
    progress: impl Fn(usize) -> Progress,
) -> Analysis {
    let cols = m.cols();
    let mut v = sample_start(m);
    let mut passes = 0;
    // The mean and the per-row `|r|²` and `r·m`, from the first pass.
    let mut mean: Vec<f64> = Vec::new();
    let mut first = RowSums::default();
    loop {
        passes += 1;
        let v32: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        let wants = Wants {
            sum: passes == 1,
            power: true,
            known: (passes > 1).then_some(first.sq.as_slice()),
        };
        let mut p = pass(m, reference, &v32, wants, &progress(passes));
        let n = p.finite.max(1) as f64;
        if passes == 1 {
            mean = p.sum.iter().map(|s| s / n).collect();
            first.sq = std::mem::take(&mut p.rows.sq);
            first.dot_ref = std::mem::take(&mut p.rows.dot_ref);
        }
        let mv = dot(&mean, &v);
        // C v = Σ r (r·v) / n − μ (μ·v): the covariance times v.
        let w: Vec<f64> = (0..cols).map(|j| p.mtmv[j] / n - mean[j] * mv).collect();
        let next = unit(&w);
        let done = match &next {
            Some(u) => 1.0 - dot(u, &v).abs() < TOLERANCE,
            None => true,
        };
        if done || passes >= MAX_PASSES {
            first.dot_pc = p.rows.dot_pc;
            return Analysis {
                rows: first,
                pc: Some(v32),
                passes,
            };
        }
        if let Some(mut u) = next {
            // Keep the sign steady so successive estimates compare.
            if dot(&u, &v) < 0.0 {
                u.iter_mut().for_each(|x| *x = -*x);
            }
            v = u;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Dtype;

    fn matrix(values: &[f32], rows: usize, cols: usize) -> Vec<u8> {
        assert_eq!(values.len(), rows * cols);
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn component_of_a_known_spread() {
        // Rows spread along (3, 4, 0)/5 around an offset, with a little
        // noise across: the component is that axis (up to sign).
        let (rows, cols) = (300, 3);
        let mut values = Vec::new();
        for i in 0..rows {
            let t = (i as f32 - 150.0) / 10.0;
            let noise = ((i * 7919) % 13) as f32 / 130.0 - 0.05;
            values.extend([5.0 + 0.6 * t, -2.0 + 0.8 * t, 1.0 + noise]);
        }
        let bytes = matrix(&values, rows, cols);
        let m = Matrix::new("t", &bytes, Dtype::F32, &[rows, cols]).unwrap();
        let a = with_component(&m, &[0.0; 3], |_| Progress::hidden());
        let pc = a.pc.unwrap();
        let along = (pc[0] * 0.6 + pc[1] * 0.8).abs();
        assert!(along > 0.9999, "{pc:?}");
        assert!(a.passes <= 2, "{} passes", a.passes);
        assert_eq!(a.rows.sq.len(), rows);
        let want = values[0] * values[0] + values[1] * values[1] + values[2] * values[2];
        assert_eq!(a.rows.dot_ref, vec![0.0; rows]);
        assert!((a.rows.sq[0] - want).abs() < 1e-3);
        let dv = values[3] * pc[0] + values[4] * pc[1] + values[5] * pc[2];
        assert!((a.rows.dot_pc[1] - dv).abs() < 1e-4);
    }

    #[test]
    fn non_finite_rows_are_marked_and_left_out() {
        let values = [1.0, 2.0, f32::NAN, 0.0, 3.0, 4.0, 0.0, 0.0];
        let bytes = matrix(&values, 4, 2);
        let m = Matrix::new("t", &bytes, Dtype::F32, &[4, 2]).unwrap();
        let a = sums(&m, Some(&[1.0, 1.0]), &Progress::hidden());
        let p = pass(
            &m,
            &[0.0; 2],
            &[1.0, 0.0],
            Wants {
                sum: true,
                power: true,
                known: None,
            },
            &Progress::hidden(),
        );
        assert_eq!(p.finite, 3);
        assert_eq!(p.sum, vec![4.0, 6.0]);
        assert_eq!(p.mtmv, vec![10.0, 14.0]);
        // A later pass takes the rows to leave out from the first.
        let wants = Wants {
            sum: false,
            power: true,
            known: Some(&a.rows.sq),
        };
        let later = pass(&m, &[0.0; 2], &[1.0, 0.0], wants, &Progress::hidden());
        assert_eq!((later.finite, later.mtmv), (3, vec![10.0, 14.0]));
        assert_eq!(later.rows.dot_pc[2], 3.0);
        assert!(later.rows.dot_pc[1].is_nan());
        assert_eq!(a.rows.sq[0], 5.0);
        assert!(a.rows.sq[1].is_nan());
        assert_eq!(a.rows.dot_ref[2], 7.0);
        assert_eq!(a.rows.sq[3], 0.0);
        assert_eq!(a.passes, 1);
    }

    #[test]
    fn wide_and_portable_builds_agree() {
        // 70 rows of 100 BF16 values (several blocks of the scan would be
        // needed for more; one block exercises both builds fully).
        let (rows, cols) = (70, 100);
        let values: Vec<f32> = (0..rows * cols)
            .map(|i| ((i * 7919 % 1000) as f32 - 500.0) / 256.0)
            .collect();
        let bytes: Vec<u8> = values
            .iter()
            .flat_map(|&v| half::bf16::from_f32(v).to_le_bytes())
            .collect();
        let m = Matrix::new("t", &bytes, Dtype::BF16, &[rows, cols]).unwrap();
        let reference: Vec<f32> = (0..cols).map(|j| j as f32 / 100.0).collect();
        let v: Vec<f32> = (0..cols).map(|j| 1.0 - j as f32 / 50.0).collect();
        let wants = Wants {
            sum: true,
            power: true,
            known: None,
        };
        let portable = pass_with(false, &m, &reference, &v, wants, &Progress::hidden());
        let want: f32 = m.row(3).iter().zip(&v).map(|(a, b)| a * b).sum();
        assert!((portable.rows.dot_pc[3] - want).abs() < 1e-3 * want.abs().max(1.0));
        if !has_avx512() {
            return;
        }
        let wide = pass_with(true, &m, &reference, &v, wants, &Progress::hidden());
        let close = |a: f32, b: f32| (a - b).abs() <= 1e-4 * a.abs().max(1.0);
        for (x, y) in [
            (&portable.rows.sq, &wide.rows.sq),
            (&portable.rows.dot_ref, &wide.rows.dot_ref),
            (&portable.rows.dot_pc, &wide.rows.dot_pc),
        ] {
            assert!(x.iter().zip(y).all(|(a, b)| close(*a, *b)));
        }
        for (x, y) in [(&portable.sum, &wide.sum), (&portable.mtmv, &wide.mtmv)] {
            assert!(
                x.iter()
                    .zip(y)
                    .all(|(a, b)| (a - b).abs() <= 1e-3 * a.abs().max(1.0))
            );
        }
        assert_eq!(portable.finite, 70);
    }
}
