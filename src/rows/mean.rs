//! The mean of some rows of a matrix (the reference rows of `check` and
//! `undertrained`): each column summed in f64 over the finite rows; and a
//! row added to such sums as a pass streams it ([`add_row`], the base
//! mean of `diff`).

use super::row::{L, Row};
use crate::aligned::Aligned;
use crate::cpu::{Isa, RowBuild};
use crate::matrix::Matrix;

/// The mean of the finite `ids` rows of `m`, or `None` when there is none:
/// each column summed in f64, in the order of `ids`.
pub(crate) fn mean_of(m: &Matrix, ids: &[u32]) -> Option<Aligned<f32>> {
    let mut sum = vec![0f64; m.cols()];
    let mut row = vec![0f32; m.cols()];
    let mut n = 0usize;
    for &id in ids {
        let id = id as usize;
        m.block_into(id..id + 1, &mut row);
        if add_finite(&mut sum, &row) {
            n += 1;
        }
    }
    (n > 0).then(|| sum.iter().map(|s| (s / n as f64) as f32).collect())
}

/// Adds `row` to `sum` when all its values are finite; says whether it
/// did. In the build of the row loops the CPU runs (see
/// [`RowBuild`]; the sums are the same in every build): the reference rows
/// of a large vocabulary are a few MB.
fn add_finite(sum: &mut [f64], row: &[f32]) -> bool {
    match RowBuild::detect().isa() {
        // SAFETY: a `RowBuild` runs only on a CPU with its instructions.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { add_finite_avx512(sum, row) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { add_finite_avx2(sum, row) },
        _ => add_finite_body(sum, row),
    }
}

/// [`add_finite_body`] compiled for AVX-512.
///
/// # Safety
/// The CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn add_finite_avx512(sum: &mut [f64], row: &[f32]) -> bool {
    add_finite_body(sum, row)
}

/// [`add_finite_body`] compiled for AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn add_finite_avx2(sum: &mut [f64], row: &[f32]) -> bool {
    add_finite_body(sum, row)
}

/// The body of [`add_finite`]: the finiteness test without early exits,
/// so that both loops vectorise.
#[inline(always)]
fn add_finite_body(sum: &mut [f64], row: &[f32]) -> bool {
    let finite = row.iter().fold(true, |ok, x| ok & x.is_finite());
    if finite {
        sum.iter_mut()
            .zip(row)
            .for_each(|(s, &x)| *s += f64::from(x));
    }
    finite
}

/// Adds each value of `row` to its column's sum in `sum` (of `row.len()`
/// values), in f64, a step of [`L`] values at a time; for loops that
/// read the row in place for other sums too, in the build they run.
#[inline(always)]
pub(crate) fn add_row(sum: &mut [f64], row: impl Row) {
    assert_eq!(sum.len(), row.len(), "one sum per column");
    let whole = row.len() / L * L;
    for k in (0..whole).step_by(L) {
        let x = row.chunk(k);
        let s: &mut [f64; L] = (&mut sum[k..k + L]).try_into().expect("L values");
        for l in 0..L {
            s[l] += f64::from(x[l]);
        }
    }
    for (j, s) in sum.iter_mut().enumerate().skip(whole) {
        *s += f64::from(row.at(j));
    }
}
