//! The parallel streaming pass over a matrix's rows that `check` and
//! `undertrained` share ([`scan`]), and the per-row result columns its
//! workers fill in place (`F32Column`, `U64Column`).
//!
//! The pass reads the mapped rows once, in blocks of about a MiB on all
//! cores; what each block is for is the caller's. The search streams the
//! rows too, but with its own blocks and kernels (see `search`): it takes
//! only `block_rows` from here.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU32, AtomicU64};

use rayon::prelude::*;

use crate::matrix::Matrix;
use crate::progress::Progress;

/// Raw bytes per block of rows for [`scan`].
const SCAN_BLOCK_BYTES: usize = 1 << 20;

/// Visits the whole matrix once on all cores, a block of rows at a time,
/// counting rows on `progress` (the caller finishes it, so one bar can
/// span several scans). Once `progress` is cancelled, the remaining blocks
/// are skipped and the result is partial.
///
/// Each worker starts from `init()`; `visit(state, first_row, raw)` sees
/// the stored bytes of whole rows from `first_row` on, and reads them as it
/// likes (in place, or converted a row at a time). States of adjacent row
/// ranges are combined by `merge(left, right)`, so with an associative
/// `merge` the result does not depend on the number of threads.
pub fn scan<S: Send>(
    m: &Matrix,
    progress: &Progress,
    init: impl Fn() -> S + Sync,
    visit: impl Fn(&mut S, usize, &[u8]) + Sync,
    merge: impl Fn(S, S) -> S + Sync,
) -> S {
    let rows = m.rows();
    let block_rows = block_rows(m, SCAN_BLOCK_BYTES);
    let state = (0..rows.div_ceil(block_rows))
        .into_par_iter()
        .fold(&init, |mut state, b| {
            if progress.is_cancelled() {
                return state;
            }
            let range = b * block_rows..((b + 1) * block_rows).min(rows);
            visit(&mut state, range.start, m.block_bytes(range.clone()));
            progress.inc(range.len() as u64);
            state
        })
        .reduce_with(&merge);
    state.unwrap_or_else(init)
}

/// Rows per block of about `bytes`: a multiple of 32 (the AMX tile pair) or
/// else of 8 (the AVX-512 row tile) when possible, so that the search's
/// kernels meet whole tiles.
pub(crate) fn block_rows(m: &Matrix, bytes: usize) -> usize {
    let n = (bytes / m.row_len_bytes()).max(1);
    match n {
        32.. => n / 32 * 32,
        8.. => n / 8 * 8,
        _ => n,
    }
}

/// One `f32` per row of a matrix, set during a [`scan`] by whichever
/// worker reads the row's block, at the row's place, and read back whole
/// after it. Nothing is gathered and copied after the scan: gathering runs
/// of per-block results from growing vectors takes fresh memory (a page
/// fault per 4 KiB) during the pass and a copy after it, both larger than
/// one column written in place. (Relaxed atomic stores are plain stores on
/// x86.)
pub(crate) struct F32Column(Vec<AtomicU32>);

impl F32Column {
    /// `rows` zeros.
    pub(crate) fn zeros(rows: usize) -> F32Column {
        F32Column((0..rows).map(|_| AtomicU32::new(0)).collect())
    }

    /// Sets row `i`'s value.
    #[inline]
    pub(crate) fn set(&self, i: usize, x: f32) {
        self.0[i].store(x.to_bits(), Relaxed);
    }

    /// The values, in row order (in the same memory).
    pub(crate) fn into_vec(self) -> Vec<f32> {
        self.0
            .into_iter()
            .map(|x| f32::from_bits(x.into_inner()))
            .collect()
    }
}

/// [`F32Column`] for `u64` values.
pub(crate) struct U64Column(Vec<AtomicU64>);

impl U64Column {
    /// `rows` zeros.
    pub(crate) fn zeros(rows: usize) -> U64Column {
        U64Column((0..rows).map(|_| AtomicU64::new(0)).collect())
    }

    /// Sets row `i`'s value.
    #[inline]
    pub(crate) fn set(&self, i: usize, x: u64) {
        self.0[i].store(x, Relaxed);
    }

    /// The values, in row order (in the same memory).
    pub(crate) fn into_vec(self) -> Vec<u64> {
        self.0.into_iter().map(AtomicU64::into_inner).collect()
    }
}

#[cfg(test)]
mod tests {
    use half::f16;

    use super::*;
    use crate::dtype::Dtype;

    /// `rows × cols` F16 values from a tiny xorshift generator.
    fn f16_rows(rows: usize, cols: usize, seed: u64) -> Vec<u8> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..rows * cols)
            .flat_map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                let v = (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0;
                f16::from_f32(v).to_le_bytes()
            })
            .collect()
    }

    #[test]
    fn columns_take_every_row_at_its_place() {
        // 4 MB: four 1 MiB blocks, read by several workers.
        let (rows, cols) = (5000, 400);
        let bytes = f16_rows(rows, cols, 5);
        let m = Matrix::new("t", &bytes, Dtype::F16, &[rows, cols]).unwrap();
        let (f, u) = (F32Column::zeros(rows), U64Column::zeros(rows));
        let blocks = scan(
            &m,
            &Progress::hidden(),
            || 0usize,
            |blocks, first, raw| {
                *blocks += 1;
                for id in first..first + raw.len() / (2 * cols) {
                    f.set(id, id as f32 / 2.0);
                    u.set(id, id as u64 * 3);
                }
            },
            |a, b| a + b,
        );
        assert!(blocks > 1);
        assert_eq!(blocks, rows.div_ceil(block_rows(&m, SCAN_BLOCK_BYTES)));
        let want: Vec<f32> = (0..rows).map(|id| id as f32 / 2.0).collect();
        assert_eq!(f.into_vec(), want);
        assert_eq!(
            u.into_vec(),
            (0..rows as u64).map(|id| id * 3).collect::<Vec<_>>()
        );
    }

    #[test]
    fn scan_sees_every_row_once_in_order() {
        // 4 MB: four 1 MiB blocks, so order and merging are exercised.
        let (rows, cols) = (5000, 400);
        let bytes = f16_rows(rows, cols, 3);
        let m = Matrix::new("t", &bytes, Dtype::F16, &[rows, cols]).unwrap();
        let (firsts, seen) = scan(
            &m,
            &Progress::hidden(),
            || (Vec::new(), 0usize),
            |s, first, raw| {
                assert_eq!(raw.len() % (2 * cols), 0);
                assert_eq!(raw, &bytes[first * cols * 2..first * cols * 2 + raw.len()]);
                s.0.push(first);
                s.1 += raw.len();
            },
            |mut a, b| {
                a.0.extend(b.0);
                (a.0, a.1 + b.1)
            },
        );
        assert!(firsts.len() > 1, "{firsts:?}");
        assert!(firsts.windows(2).all(|w| w[0] < w[1]) && firsts[0] == 0);
        assert_eq!(seen, bytes.len());
        let cancelled = Progress::hidden();
        cancelled.cancel();
        assert_eq!(
            scan(&m, &cancelled, || 0, |s, _, _| *s += 1, |a, b| a + b),
            0
        );
        let empty = Matrix::new("e", &[], Dtype::F16, &[0, 4]).unwrap();
        assert_eq!(
            scan(&empty, &Progress::hidden(), || 7, |_, _, _| {}, |a, _| a),
            7
        );
    }
}
