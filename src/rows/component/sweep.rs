//! The sweep of the power iteration: the sums each iteration needs over
//! the sample's rows, read in place from the mapped bytes (BF16 decoded
//! in registers, other dtypes a tile at a time into a buffer) on all
//! cores, in the widest build the CPU runs.

use rayon::prelude::*;

use crate::aligned::Aligned;
use crate::cpu::{Isa, PORTABLE_FUSES, RowBuild};
use crate::dtype::Dtype;
use crate::matrix::Matrix;
use crate::rows::dots::{axpy, dots};
use crate::rows::row::{Bf16, Row, prefetch};

/// Sample rows per task of a sweep.
const CHUNK: usize = 64;
/// Sample rows per tile of a task: their dot products are taken a row at
/// a time (the vector in L1 as each row streams past), then the rows are
/// added to the sums together while their bytes are still in L2, so the
/// sums (16 KiB for a 4096-wide row) are read and written once per tile,
/// not once per row.
const TILE: usize = 8;

/// What a sweep sums over its rows.
#[derive(Clone, Copy)]
pub(super) enum Sum<'v> {
    /// The finite rows, listed, with their sum of squares; with a `v`,
    /// also `Σ r (r·v)` over them (the first iteration, in the same read).
    Finite(Option<&'v [f32]>),
    /// `Σ r (r·v)`.
    Along(&'v [f32]),
    /// `Σ r (r·v)` and, beside it, `Σ r (r·w)`: an iteration of two
    /// estimates in one read.
    Two(&'v [f32], &'v [f32]),
}

/// One worker's share of a sweep.
struct Acc {
    /// This chunk's sum, in f32.
    chunk: Aligned<f32>,
    /// The sum over finished chunks.
    total: Vec<f64>,
    /// This chunk's and the finished chunks' `Σ r (r·v)` in a
    /// [`Sum::Finite`] sweep with a `v`, or `Σ r (r·w)` in a [`Sum::Two`]
    /// sweep (else empty).
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
    // The rows added (the finite ones, for `Sum::Finite`), and their `r·v`
    // (and `r·w`).
    let (mut kept, mut along, mut n) = ([rows[0]; TILE], [0f32; TILE], 0);
    let mut beside = [0f32; TILE];
    for (k, (&r, &i)) in rows.iter().zip(ids).enumerate() {
        ask(k + 1);
        match sum {
            Sum::Along(v) => {
                (kept[n], along[n]) = (r, dots::<FMA, 1>(r, [v]).1[0]);
                n += 1;
            }
            Sum::Two(v, w) => {
                let [d, e] = dots::<FMA, 2>(r, [v, w]).1;
                (kept[n], along[n], beside[n]) = (r, d, e);
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
        Sum::Two(..) => {
            axpy::<FMA, _>(&mut acc.chunk, &along[..n], &kept[..n]);
            axpy::<FMA, _>(&mut acc.chunk_along, &beside[..n], &kept[..n]);
        }
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
pub(super) struct Swept {
    /// `Σ r (r·v)` ([`Sum::Along`], [`Sum::Two`]), or the sum of the
    /// finite rows.
    pub sum: Vec<f64>,
    /// [`Sum::Finite`] with a `v`: `Σ r (r·v)` over the finite rows;
    /// [`Sum::Two`]: `Σ r (r·w)`.
    pub along: Option<Vec<f64>>,
    /// [`Sum::Finite`]: the finite rows (sorted).
    pub finite: Vec<usize>,
    /// [`Sum::Finite`]: their sum of squares.
    pub squares: f64,
}

/// The sums `sum` asks for over the rows `ids` of `m`.
pub(super) fn sweep(build: RowBuild, m: &Matrix, ids: &[usize], sum: Sum) -> Swept {
    let cols = m.cols();
    let along_cols = match sum {
        Sum::Finite(Some(_)) | Sum::Two(..) => cols,
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
