//! The streaming pass of `diff` over one pair of matrices: the base rows
//! in blocks through [`stream::scan`], each beside the tuned row it is
//! paired with (the rows of the same ids, in cache together), every pair
//! compared by the shared loop of `rows::pairs`. When the fine-tune added
//! rows, the same read of each base row also adds it to the column sums
//! of the base mean and makes its key, by which a copied row is found
//! (see `init`).
//!
//! Nothing the size of a matrix is allocated: three f32 per base row
//! (norm, cosine, relative change) and, with added rows, a u64 key.

use crate::cpu::RowBuild;
use crate::matrix::Matrix;
use crate::progress::Progress;
use crate::rows::pairs::{self, Block, Compared, PairSums, Scratch};
use crate::stream::{self, F32Column, U64Column};

use super::pairing::{NONE, Pairing};
use super::tolerance::Tolerance;

/// What the pass learns about a pair of matrices.
#[derive(Debug, Default)]
pub(crate) struct Measured {
    /// The L2 norm of every base row (NaN where it is not finite).
    pub norms: Vec<f32>,
    /// Per base row: the cosine with its tuned row where the pair changed
    /// and is finite, else NaN.
    pub cosine: Vec<f32>,
    /// Per base row: `|tuned − base| / |base|` where the pair changed and
    /// is finite (infinite for a zero base row), else NaN.
    pub relative: Vec<f32>,
    /// Pairs whose values are equal (within the tolerance, if any).
    pub identical: usize,
    /// Pairs that are not.
    pub changed: usize,
    /// Of those, pairs holding NaN or an infinity.
    pub non_finite: usize,
    /// The mean of the finite base rows (when asked, and there is one).
    pub mean: Option<Vec<f32>>,
    /// Every base row's key (when asked; see `key::values_key`).
    pub keys: Vec<u64>,
}

/// What a worker keeps over the blocks it reads: buffers reused block
/// after block, its share of the base mean's column sums, and counts.
struct Run<'a> {
    scratch: Scratch,
    block: Vec<Compared>,
    tuned: Vec<Option<&'a [u8]>>,
    sums: Vec<f64>,
    summed: usize,
    counts: Counts,
}

/// Pairs by outcome.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    identical: usize,
    changed: usize,
    non_finite: usize,
}

/// Reads `base` and `tuned` once, pair by pair as `pairing` has them,
/// counting on `progress` (the caller finishes it); with `init`, makes
/// the base mean and the rows' keys too.
pub(crate) fn measure(
    base: &Matrix,
    tuned: &Matrix,
    pairing: &Pairing,
    tolerance: Option<&Tolerance>,
    init: bool,
    progress: &Progress,
) -> Measured {
    let build = RowBuild::detect();
    let rows = base.rows();
    let (norms, cosine, relative) = (
        F32Column::zeros(rows),
        F32Column::zeros(rows),
        F32Column::zeros(rows),
    );
    let keys = init.then(|| U64Column::zeros(rows));
    let cols = base.cols();
    let run = stream::scan(
        base,
        progress,
        || Run {
            scratch: Scratch::default(),
            block: Vec::new(),
            tuned: Vec::new(),
            sums: if init { vec![0.0; cols] } else { Vec::new() },
            summed: 0,
            counts: Counts::default(),
        },
        |run, first, raw| {
            let n = raw.len() / base.row_len_bytes();
            run.tuned.clear();
            run.tuned.extend(
                pairing.tuned_of[first..first + n]
                    .iter()
                    .map(|&t| (t != NONE).then(|| tuned.row_bytes(t as usize))),
            );
            run.block.clear();
            run.summed += pairs::compare(
                build,
                Block {
                    cols,
                    base_dtype: base.dtype(),
                    base: raw,
                    tuned_dtype: tuned.dtype(),
                    tuned: &run.tuned,
                    sums: init.then_some(run.sums.as_mut_slice()),
                    keys: init,
                },
                &mut run.scratch,
                &mut run.block,
            );
            for (i, c) in run.block.iter().enumerate() {
                let b = first + i;
                let s = &c.sums;
                norms.set(b, s.aa.sqrt());
                if let Some(keys) = &keys {
                    keys.set(b, c.key);
                }
                let (cos, rel) = match pairing.tuned_of[b] {
                    NONE => (f32::NAN, f32::NAN),
                    t => outcome(base, tuned, b, t as usize, s, tolerance, &mut run.counts),
                };
                cosine.set(b, cos);
                relative.set(b, rel);
            }
        },
        |mut a, b| {
            a.sums.iter_mut().zip(&b.sums).for_each(|(x, y)| *x += y);
            a.summed += b.summed;
            a.counts.identical += b.counts.identical;
            a.counts.changed += b.counts.changed;
            a.counts.non_finite += b.counts.non_finite;
            a
        },
    );
    let mean = (run.summed > 0).then(|| {
        let n = run.summed as f64;
        run.sums.iter().map(|s| (s / n) as f32).collect()
    });
    Measured {
        norms: norms.into_vec(),
        cosine: cosine.into_vec(),
        relative: relative.into_vec(),
        identical: run.counts.identical,
        changed: run.counts.changed,
        non_finite: run.counts.non_finite,
        mean,
        keys: keys.map(U64Column::into_vec).unwrap_or_default(),
    }
}

/// Whether base row `b` and tuned row `t`, whose sums are `s`, are equal
/// (counted in `counts`), and if not, their cosine and relative change
/// (NaN where the rows are not finite).
fn outcome(
    base: &Matrix,
    tuned: &Matrix,
    b: usize,
    t: usize,
    s: &PairSums,
    tolerance: Option<&Tolerance>,
    counts: &mut Counts,
) -> (f32, f32) {
    if !s.finite() {
        // Rare: the values, one by one (a NaN equals a NaN here).
        let equal = base
            .row(b)
            .iter()
            .zip(tuned.row(t))
            .all(|(&x, y)| x == y || (x.is_nan() && y.is_nan()));
        if equal {
            counts.identical += 1;
        } else {
            counts.changed += 1;
            counts.non_finite += 1;
        }
        return (f32::NAN, f32::NAN);
    }
    let same = s.max_diff == 0.0 || tolerance.is_some_and(|tol| tol.allows(s));
    if same {
        counts.identical += 1;
        return (f32::NAN, f32::NAN);
    }
    counts.changed += 1;
    let (aa, bb) = (f64::from(s.aa), f64::from(s.bb));
    let cos = if aa > 0.0 && bb > 0.0 {
        (f64::from(s.ab) / (aa * bb).sqrt()).clamp(-1.0, 1.0)
    } else {
        0.0
    };
    let rel = if aa > 0.0 {
        (f64::from(s.dd) / aa).sqrt()
    } else {
        f64::INFINITY
    };
    (cos as f32, rel as f32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Dtype;

    #[test]
    fn pairs_are_counted_and_measured_across_dtypes() {
        // 3000 rows of 96 values (several blocks of the scan): BF16 base,
        // F32 fine-tune with rows 5 and 2000 changed and row 7 holding a
        // NaN on both sides; two rows appended.
        let (rows, cols) = (3000, 96);
        let values: Vec<f32> = (0..rows * cols)
            .map(|i| half::bf16::from_f32(((i * 7919 % 1013) as f32 - 506.0) / 300.0).to_f32())
            .collect();
        let mut base_values = values.clone();
        base_values[7 * cols + 3] = f32::NAN;
        let mut tuned_values = base_values.clone();
        tuned_values[5 * cols] += 1.0;
        for x in &mut tuned_values[2000 * cols..2001 * cols] {
            *x = -*x;
        }
        tuned_values.extend(vec![0.25; 2 * cols]);
        let (b, t) = (
            Dtype::BF16.encode(&base_values),
            Dtype::F32.encode(&tuned_values),
        );
        let base = Matrix::new("b", &b, Dtype::BF16, &[rows, cols]).unwrap();
        let tuned = Matrix::new("t", &t, Dtype::F32, &[rows + 2, cols]).unwrap();
        let pairing = Pairing::by_id(rows, rows + 2);
        let m = measure(&base, &tuned, &pairing, None, true, &Progress::hidden());
        assert_eq!((m.identical, m.changed, m.non_finite), (rows - 2, 2, 0));
        assert!(m.cosine[5] > 0.9 && m.cosine[5] < 1.0);
        assert!((m.cosine[2000] + 1.0).abs() < 1e-6);
        assert!((m.relative[2000] - 2.0).abs() < 1e-5);
        assert!(m.cosine[4].is_nan() && m.relative[7].is_nan());
        assert!(m.norms[7].is_nan() && m.norms[8] > 0.0);
        // The mean of the finite rows, and a key for each row.
        let mean = m.mean.unwrap();
        let want: f64 = (0..rows)
            .filter(|&r| r != 7)
            .map(|r| f64::from(base_values[r * cols + 1]))
            .sum::<f64>()
            / (rows - 1) as f64;
        assert!((f64::from(mean[1]) - want).abs() < 1e-6);
        assert_eq!(m.keys.len(), rows);
        assert_ne!(m.keys[0], m.keys[1]);
        // A NaN in one side only is a change.
        tuned_values[7 * cols + 3] = 1.0;
        let t = Dtype::F32.encode(&tuned_values);
        let tuned = Matrix::new("t", &t, Dtype::F32, &[rows + 2, cols]).unwrap();
        let m = measure(&base, &tuned, &pairing, None, false, &Progress::hidden());
        assert_eq!((m.changed, m.non_finite), (3, 1));
        assert!(m.mean.is_none() && m.keys.is_empty());
    }

    #[test]
    fn rounding_within_the_tolerance_is_identical() {
        // F32 rows against their BF16 rounding.
        let (rows, cols) = (4, 64);
        let values: Vec<f32> = (0..rows * cols).map(|i| (i as f32 * 0.37).sin()).collect();
        let (b, t) = (Dtype::F32.encode(&values), Dtype::BF16.encode(&values));
        let base = Matrix::new("b", &b, Dtype::F32, &[rows, cols]).unwrap();
        let tuned = Matrix::new("t", &t, Dtype::BF16, &[rows, cols]).unwrap();
        let pairing = Pairing::by_id(rows, rows);
        let exact = measure(&base, &tuned, &pairing, None, false, &Progress::hidden());
        assert_eq!(exact.changed, rows);
        let tol = Tolerance::of(Dtype::F32, Dtype::BF16);
        let m = measure(
            &base,
            &tuned,
            &pairing,
            tol.as_ref(),
            false,
            &Progress::hidden(),
        );
        assert_eq!((m.identical, m.changed), (rows, 0));
    }
}
