//! The streaming pass of `undertrained` over one matrix: per-row sums
//! `|r|²`, `r·m` against the reference mean and `r·c` against the first
//! principal component (see `rows::component`), all through [`stream::scan`].
//!
//! The reference mean may arrive while the pass runs (it needs the
//! vocabulary, which loads alongside, see `plan`): blocks read before it
//! is known get their `r·m` from a second read of just those blocks
//! ([`catch_up`]).
//!
//! Each block's sums come from the shared row loops (`rows::sums`);
//! nothing the size of the matrix is allocated beyond three f32 per row. A
//! BF16 matrix dotted with two vectors of BF16 values (an untied head, see
//! `plan`) is read with `vdpbf16ps` where the CPU has it
//! (`rows::dpbf16`): the same products, summed in another order.

use std::ops::Range;
use std::sync::OnceLock;

use rayon::prelude::*;

use crate::aligned::Aligned;
use crate::dtype::Dtype;
use crate::matrix::Matrix;
use crate::progress::Progress;
use crate::stream::{self, F32Column};

use crate::cpu::RowBuild;
use crate::rows::dpbf16::{self, Bf16Vectors};
use crate::rows::sums::block_sums;

/// Per-row sums from the pass over a matrix.
#[derive(Debug, Default)]
pub(crate) struct RowSums {
    /// `|r|²` of every row (NaN for rows holding NaN or Inf).
    pub sq: Vec<f32>,
    /// `r · m` with the reference mean (0 without one).
    pub dot_ref: Vec<f32>,
    /// `r · c` with the first principal component (0 without one).
    pub dot_pc: Vec<f32>,
    /// Rows read before the reference mean was known, whose `dot_ref`
    /// waits for [`catch_up`].
    pub pending: Vec<Range<usize>>,
}

/// The reference mean of a pass, set before it starts or while it runs;
/// `None` inside when there is none.
pub(crate) type Mean = OnceLock<Option<Aligned<f32>>>;

/// What a worker keeps over the blocks it reads: buffers for decoding
/// rows and for a block's sums (reused block after block), and the blocks
/// read before the reference mean was known.
#[derive(Default)]
struct Run {
    buf: Vec<f32>,
    block: Vec<[f32; 3]>,
    pending: Vec<Range<usize>>,
}

/// Reads `m` once for per-row sums against the `reference` mean and the
/// component `pc` (0 where either is missing).
pub(crate) fn sums(
    m: &Matrix,
    reference: &Mean,
    pc: Option<&[f32]>,
    progress: &Progress,
) -> RowSums {
    sums_with(
        RowBuild::detect(),
        dpbf16::available(),
        m,
        reference,
        pc,
        progress,
    )
}

/// Every row of `m`, in pieces of a few MiB that [`catch_up`] shares
/// among the cores.
pub(crate) fn all_rows(m: &Matrix) -> Vec<Range<usize>> {
    let step = ((4 << 20) / m.row_len_bytes().max(1)).max(1);
    (0..m.rows())
        .step_by(step)
        .map(|a| a..(a + step).min(m.rows()))
        .collect()
}

/// Fills in `dot_ref` of the `pending` rows of `rows` against `mean`,
/// reading only those rows again.
pub(crate) fn catch_up(m: &Matrix, rows: &mut RowSums, mean: &[f32]) {
    let build = RowBuild::detect();
    let done: Vec<(usize, Vec<[f32; 3]>)> = std::mem::take(&mut rows.pending)
        .into_par_iter()
        .map(|range| {
            let (first, mut sums) = (range.start, Vec::new());
            block_sums(
                build,
                m,
                &mut Vec::new(),
                range,
                Some(mean),
                None,
                &mut sums,
            );
            (first, sums)
        })
        .collect();
    for (first, block) in done {
        for (i, d) in block.iter().enumerate() {
            rows.dot_ref[first + i] = d[1];
        }
    }
}

/// [`sums`] in the `build` given, so tests can compare them.
/// With `bf16_dots`, a BF16 matrix dotted with both a mean known from the
/// start and a component, both of BF16 values, is read by `vdpbf16ps`
/// (see `rows::dpbf16`).
fn sums_with(
    build: RowBuild,
    bf16_dots: bool,
    m: &Matrix,
    reference: &Mean,
    pc: Option<&[f32]>,
    progress: &Progress,
) -> RowSums {
    let columns: [F32Column; 3] = std::array::from_fn(|_| F32Column::zeros(m.rows()));
    let bf16_vectors = match (reference.get(), pc) {
        (Some(Some(mean)), Some(pc)) if bf16_dots && m.dtype() == Dtype::BF16 => {
            Bf16Vectors::new(mean, pc)
        }
        _ => None,
    };
    let pending = stream::scan(
        m,
        progress,
        Run::default,
        |run, first, raw| {
            let rows = first..first + raw.len() / m.row_len_bytes();
            let mean = match reference.get() {
                None => {
                    run.pending.push(rows.clone());
                    None
                }
                Some(mean) => mean.as_deref(),
            };
            run.block.clear();
            match &bf16_vectors {
                Some(p) => dpbf16::rows(raw, p, &mut run.block),
                None => block_sums(build, m, &mut run.buf, rows, mean, pc, &mut run.block),
            }
            for (i, sums) in run.block.iter().enumerate() {
                for (column, &x) in columns.iter().zip(sums) {
                    column.set(first + i, x);
                }
            }
        },
        |mut a, b| {
            a.pending.extend(b.pending);
            a
        },
    )
    .pending;
    progress.finish();
    let [sq, dot_ref, dot_pc] = columns.map(F32Column::into_vec);
    RowSums {
        sq,
        dot_ref,
        dot_pc,
        pending,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bits of every sum (NaNs compare equal).
    fn bits(s: &RowSums) -> [Vec<u32>; 3] {
        [&s.sq, &s.dot_ref, &s.dot_pc].map(|x| x.iter().map(|y| y.to_bits()).collect())
    }

    #[test]
    fn non_finite_rows_are_marked() {
        let values = [1.0f32, 2.0, f32::NAN, 0.0, 3.0, 4.0, 0.0, 0.0];
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let m = Matrix::new("t", &bytes, Dtype::F32, &[4, 2]).unwrap();
        let mean = OnceLock::from(Some(Aligned::copy_of(&[1.0, 1.0])));
        let a = sums(&m, &mean, Some(&[1.0, 0.0]), &Progress::hidden());
        assert_eq!(a.sq[0], 5.0);
        assert!(a.sq[1].is_nan() && a.dot_pc[1].is_nan());
        assert_eq!((a.dot_ref[2], a.dot_pc[2]), (7.0, 3.0));
        assert_eq!(a.sq[3], 0.0);
        let none = sums(&m, &OnceLock::from(None), None, &Progress::hidden());
        assert_eq!((none.dot_ref[0], none.dot_pc[0]), (0.0, 0.0));
    }

    #[test]
    fn a_catch_up_of_every_row_makes_a_wrong_mean_right() {
        // 3000 rows of 1024 BF16 values: `all_rows` cuts them in two pieces.
        let (rows, cols) = (3000, 1024);
        let bytes: Vec<u8> = (0..rows * cols)
            .flat_map(|i| half::bf16::from_f32((i % 97) as f32 / 50.0 - 1.0).to_le_bytes())
            .collect();
        let m = Matrix::new("t", &bytes, Dtype::BF16, &[rows, cols]).unwrap();
        assert_eq!(all_rows(&m), [0..2048, 2048..3000]);
        let right: Vec<f32> = (0..cols).map(|j| j as f32 / 64.0).collect();
        let want = sums(
            &m,
            &OnceLock::from(Some(Aligned::copy_of(&right))),
            None,
            &Progress::hidden(),
        );
        let wrong = OnceLock::from(Some(Aligned::copy_of(&vec![1.0; cols])));
        let mut got = sums(&m, &wrong, None, &Progress::hidden());
        assert_ne!(got.dot_ref, want.dot_ref);
        got.pending = all_rows(&m);
        catch_up(&m, &mut got, &right);
        assert_eq!(got.dot_ref, want.dot_ref);
        assert_eq!(got.sq, want.sq);
    }

    #[test]
    fn bf16_dots_take_only_bf16_vectors_and_sum_as_the_f32_loops_nearly() {
        // 300 rows of 4096 BF16 values; a NaN in row 7.
        let (rows, cols) = (300, 4096);
        let mut values: Vec<f32> = (0..rows * cols)
            .map(|i| ((i * 7919 % 1000) as f32 - 500.0) / 25600.0)
            .collect();
        values[7 * cols + 9] = f32::NAN;
        let bytes: Vec<u8> = values
            .iter()
            .flat_map(|&v| half::bf16::from_f32(v).to_le_bytes())
            .collect();
        let m = Matrix::new("t", &bytes, Dtype::BF16, &[rows, cols]).unwrap();
        let mean: Vec<f32> = (0..cols).map(|j| (j as f32 * 0.3).sin() / 300.0).collect();
        let pc: Vec<f32> = (0..cols).map(|j| (j as f32 * 0.7).cos() / 45.0).collect();
        let build = RowBuild::detect();
        let bf16 = crate::cpu::coverage::runs("avx512bf16", dpbf16::available());
        let run = |dots: bool, mean: &[f32], pc: &[f32]| {
            let mean = OnceLock::from(Some(Aligned::copy_of(mean)));
            sums_with(
                build,
                dots && bf16,
                &m,
                &mean,
                Some(pc),
                &Progress::hidden(),
            )
        };
        // Vectors of other values than BF16 ones: the f32 loops, always.
        assert_eq!(bits(&run(true, &mean, &pc)), bits(&run(false, &mean, &pc)));
        // Rounded ones: `vdpbf16ps` where the CPU has it, the same sums to
        // their last bits.
        let (mean, pc) = (dpbf16::rounded(&mean), dpbf16::rounded(&pc));
        let (f32_loops, dots) = (run(false, &mean, &pc), run(true, &mean, &pc));
        let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
        for i in 0..rows {
            let (a, b) = (&f32_loops, &dots);
            if i == 7 {
                assert!(b.sq[i].is_nan() && b.dot_ref[i].is_nan() && b.dot_pc[i].is_nan());
                continue;
            }
            let r = a.sq[i].sqrt();
            assert!((a.sq[i] - b.sq[i]).abs() <= 1e-6 * a.sq[i], "row {i}");
            assert!(
                (a.dot_ref[i] - b.dot_ref[i]).abs() <= 1e-6 * r * norm(&mean),
                "row {i}"
            );
            assert!(
                (a.dot_pc[i] - b.dot_pc[i]).abs() <= 1e-6 * r * norm(&pc),
                "row {i}"
            );
        }
    }

    #[test]
    fn every_build_agrees_and_the_fused_ones_to_the_bit() {
        // 70 rows of 100 BF16 values (several blocks of the scan would be
        // needed for more; one block exercises every build fully).
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
        let reference = OnceLock::from(Some(Aligned::copy_of(&reference)));
        let builds = RowBuild::tested();
        let run = |b: RowBuild| sums_with(b, false, &m, &reference, Some(&v), &Progress::hidden());
        let portable = run(*builds.last().unwrap());
        let want: f32 = m.row(3).iter().zip(&v).map(|(a, b)| a * b).sum();
        assert!((portable.dot_pc[3] - want).abs() < 1e-3 * want.abs().max(1.0));
        let close = |a: f32, b: f32| (a - b).abs() <= 1e-4 * a.abs().max(1.0);
        let fused: Vec<RowSums> = builds
            .iter()
            .filter(|b| b.fused())
            .map(|&b| run(b))
            .collect();
        for s in &fused {
            for (x, y) in [
                (&portable.sq, &s.sq),
                (&portable.dot_ref, &s.dot_ref),
                (&portable.dot_pc, &s.dot_pc),
            ] {
                assert!(x.iter().zip(y).all(|(a, b)| close(*a, *b)));
            }
            assert_eq!(bits(s), bits(&fused[0]));
        }
    }

    #[test]
    fn a_missing_vector_leaves_the_other_sums_as_they_were() {
        // 40 rows of 70 BF16 values: two whole steps of the loop and a tail.
        let (rows, cols) = (40, 70);
        let bytes: Vec<u8> = (0..rows * cols)
            .map(|i| ((i as f32 * 0.37).sin() * 2.3).powi(3))
            .flat_map(|v| half::bf16::from_f32(v).to_le_bytes())
            .collect();
        let m = Matrix::new("t", &bytes, Dtype::BF16, &[rows, cols]).unwrap();
        let mean = || {
            (0..cols)
                .map(|j| (j as f32 * 0.11).cos())
                .collect::<Vec<f32>>()
        };
        let pc: Vec<f32> = (0..cols).map(|j| (j as f32 * 0.05).sin()).collect();
        let (known, none) = (
            || OnceLock::from(Some(Aligned::copy_of(&mean()))),
            || OnceLock::from(None),
        );
        let hidden = Progress::hidden();
        let both = sums(&m, &known(), Some(&pc), &hidden);
        let only_mean = sums(&m, &known(), None, &hidden);
        let only_pc = sums(&m, &none(), Some(&pc), &hidden);
        let neither = sums(&m, &none(), None, &hidden);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for other in [&only_mean, &only_pc, &neither] {
            assert_eq!(bits(&other.sq), bits(&both.sq));
        }
        assert_eq!(bits(&only_mean.dot_ref), bits(&both.dot_ref));
        assert_eq!(bits(&only_pc.dot_pc), bits(&both.dot_pc));
        assert!(both.dot_pc.iter().any(|&d| d != 0.0));
        for zeros in [
            &only_mean.dot_pc,
            &only_pc.dot_ref,
            &neither.dot_ref,
            &neither.dot_pc,
        ] {
            assert!(zeros.iter().all(|&d| d == 0.0));
        }
    }

    #[test]
    fn rows_read_before_the_mean_catch_up() {
        // 3,000 rows of 200 f32 values: three blocks of the scan.
        let (rows, cols) = (3000, 200);
        let values: Vec<f32> = (0..rows * cols).map(|i| (i % 97) as f32 - 48.0).collect();
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let m = Matrix::new("t", &bytes, Dtype::F32, &[rows, cols]).unwrap();
        let mean: Vec<f32> = (0..cols).map(|j| j as f32 / 100.0).collect();
        let known = sums(
            &m,
            &OnceLock::from(Some(Aligned::copy_of(&mean))),
            None,
            &Progress::hidden(),
        );
        assert!(known.pending.is_empty());
        let later = Mean::new();
        let mut a = sums(&m, &later, None, &Progress::hidden());
        let pending: usize = a.pending.iter().map(|r| r.len()).sum();
        assert_eq!((pending, a.pending.len() > 1), (rows, true));
        assert!(a.dot_ref.iter().all(|&d| d == 0.0));
        catch_up(&m, &mut a, &mean);
        assert!(a.pending.is_empty());
        assert_eq!((a.sq, a.dot_ref), (known.sq, known.dot_ref));
    }
}
