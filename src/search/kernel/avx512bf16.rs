//! The AVX-512 BF16 kernel (`avx512bf16`): dot products straight on the
//! stored bytes of a BF16 matrix, register-blocked over several rows and
//! several queries. The VNNI kernel refines with it and the AMX kernel
//! takes the rows past its last tile pair with it.
//!
//! A block is walked one row tile at a time (8 rows for one or two queries,
//! 4 rows otherwise, then single rows). For each row tile, every query
//! tile of up to [`QUERY_TILE`] queries meets the tile: each 32-column chunk
//! of each row is loaded once and multiplied with every query of the tile,
//! into `rows × queries` accumulators that stay in the 32 zmm registers
//! (4 × 6 = 24, plus 4 row vectors and 2 query vectors). The first query
//! tile, which reads the rows from memory, also sums their norms and asks
//! for the bytes further on. So each row is read from memory once and from
//! cache once per further query tile, and each query chunk once per row
//! tile (a pass of its own for the norms would read each row twice, which
//! shows at 1–4 queries).
//!
//! Queries are split into BF16 halves ([`Halves`]); a query tile whose
//! queries all come from BF16 rows skips its `lo` products, halving the
//! work. Every accumulator sees the same sequence of operations whatever
//! the tile shape, so a row's approximate score does not depend on where it
//! falls in a block (the final scores are re-computed exactly anyway).
//!
//! The public-in-crate function is safe: it checks the CPU features it
//! needs before entering `#[target_feature]` code.

use std::arch::x86_64::*;
use std::array::from_fn;

use crate::cpu::{has_avx512bf16, prefetch_ahead};

/// Queries per query tile.
const QUERY_TILE: usize = 6;

/// Queries split into BF16 halves for the BF16 kernels: `hi = bf16(q)` and
/// `lo = bf16(q - hi)`, which together carry about 16 significant bits of
/// `q` (relative error at most 2^-17 per value, see `shortlist`). A query
/// taken from a BF16 row has `lo` all zero, and its `lo` products are
/// skipped.
pub(super) struct Halves {
    /// The `hi` halves, queries back to back.
    pub(super) hi: Vec<u16>,
    /// The `lo` halves, queries back to back.
    pub(super) lo: Vec<u16>,
    /// Per query: its `lo` half is all (signed) zeros.
    pub(super) exact: Vec<bool>,
}

impl Halves {
    /// Splits queries of `cols` values, stored back to back.
    pub(super) fn new(queries: &[f32], cols: usize) -> Self {
        let to_bits = |x: f32| half::bf16::from_f32(x).to_bits();
        let hi: Vec<u16> = queries.iter().map(|&x| to_bits(x)).collect();
        let lo: Vec<u16> = hi
            .iter()
            .zip(queries)
            .map(|(&h, &x)| to_bits(x - half::bf16::from_bits(h).to_f32()))
            .collect();
        let exact = lo
            .chunks_exact(cols)
            .map(|lo| lo.iter().all(|&b| b & 0x7fff == 0))
            .collect();
        Halves { hi, lo, exact }
    }
}

/// Row norms and dot products for a block of stored BF16 rows (`block`,
/// little-endian, any alignment) against at least one query. Layout as in
/// `Queries::score_block`.
pub(super) fn block_bf16(
    block: &[u8],
    cols: usize,
    queries: &Halves,
    norms: Option<&mut [f32]>,
    dots: &mut [f32],
) {
    assert!(has_avx512bf16());
    assert_eq!(queries.hi.len(), queries.lo.len());
    assert!(cols > 0 && block.len().is_multiple_of(2 * cols));
    assert!(queries.hi.len().is_multiple_of(cols));
    let (rows, nq) = (block.len() / 2 / cols, queries.hi.len() / cols);
    assert!(nq > 0 && queries.exact.len() == nq, "queries");
    assert_eq!(dots.len(), rows * nq, "dots length");
    if let Some(norms) = &norms {
        assert_eq!(norms.len(), rows, "norms length");
    }
    // SAFETY: the CPU has AVX-512F, BW and BF16 (checked above).
    unsafe { walk(block, cols, rows, queries, norms, dots) }
}

/// Every row tile of the block, each against every query tile.
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
fn walk(
    block: &[u8],
    cols: usize,
    rows: usize,
    queries: &Halves,
    mut norms: Option<&mut [f32]>,
    dots: &mut [f32],
) {
    let nq = queries.exact.len();
    let row_tile = if nq <= 2 { 8 } else { 4 };
    let t = Shared {
        block,
        cols,
        hi: &queries.hi,
        lo: &queries.lo,
        nq,
    };
    let mut r0 = 0;
    while r0 < rows {
        let rn = if rows - r0 >= row_tile { row_tile } else { 1 };
        let mut q0 = 0;
        while q0 < nq {
            let qn = (nq - q0).min(QUERY_TILE);
            let lo = !queries.exact[q0..q0 + qn].iter().all(|&e| e);
            // The first query tile is the first read of the rows: it sums
            // their norms too.
            let n: &mut [f32] = match norms.as_deref_mut() {
                Some(n) if q0 == 0 => n,
                _ => &mut [],
            };
            macro_rules! tiles {
                ($(($r:literal, $q:literal)),*) => {
                    match (rn, qn, lo, n.is_empty()) {
                        $(
                            ($r, $q, false, false) => tile::<$r, $q, false, true>(&t, r0, q0, n, dots),
                            ($r, $q, true, false) => tile::<$r, $q, true, true>(&t, r0, q0, n, dots),
                            ($r, $q, false, true) => tile::<$r, $q, false, false>(&t, r0, q0, n, dots),
                            ($r, $q, true, true) => tile::<$r, $q, true, false>(&t, r0, q0, n, dots),
                        )*
                        _ => unreachable!("tile {rn} x {qn}"),
                    }
                };
            }
            tiles!(
                (8, 1),
                (8, 2),
                (4, 1),
                (4, 2),
                (4, 3),
                (4, 4),
                (4, 5),
                (4, 6),
                (1, 1),
                (1, 2),
                (1, 3),
                (1, 4),
                (1, 5),
                (1, 6)
            );
            q0 += qn;
        }
        r0 += rn;
    }
}

/// What every tile of one block reads.
struct Shared<'a> {
    block: &'a [u8],
    cols: usize,
    hi: &'a [u16],
    lo: &'a [u16],
    nq: usize,
}

/// The mask of the 32-column chunk starting at column `c`.
#[inline]
pub(super) fn chunk_mask(cols: usize, c: usize) -> __mmask32 {
    if cols - c >= 32 {
        !0
    } else {
        (1u32 << (cols - c)) - 1
    }
}

/// Loads 32 BF16 values from `p`, or the first `mask.count_ones()` of them
/// with the rest zero.
///
/// # Safety
/// The CPU has AVX-512BW, and the 32 × 2 bytes at `p` whose mask bit is set
/// are readable (masked-off elements are never accessed).
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
pub(super) unsafe fn load_bf16(p: *const u8, mask: __mmask32) -> __m512bh {
    // SAFETY: per the contract; maskz_loadu has no alignment requirement and
    // suppresses faults on masked-off elements.
    let v = unsafe { _mm512_maskz_loadu_epi16(mask, p.cast::<i16>()) };
    // SAFETY: both are plain 512-bit vectors; every bit pattern is valid.
    unsafe { std::mem::transmute::<__m512i, __m512bh>(v) }
}

/// One tile of `R` rows from `r0` × `Q` queries from `q0`: each product
/// `row · q` is accumulated as `row · hi + row · lo` per 32-column chunk
/// (`row · hi` alone without `LO`). The first query tile (`q0 == 0`, the
/// first read of the rows) asks for the rows' bytes further on (see
/// [`prefetch_ahead`]); with `NORMS`, it also sums each row's squared norm
/// as `row · row` (exact BF16 products, f32 sums) into `norms`.
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
fn tile<const R: usize, const Q: usize, const LO: bool, const NORMS: bool>(
    t: &Shared,
    r0: usize,
    q0: usize,
    norms: &mut [f32],
    dots: &mut [f32],
) {
    let (cols, nq) = (t.cols, t.nq);
    assert!((r0 + R) * cols * 2 <= t.block.len());
    assert!((q0 + Q) * cols <= t.hi.len() && (q0 + Q) * cols <= t.lo.len());
    assert!((r0 + R - 1) * nq + q0 + Q <= dots.len());
    let row_ptr: [*const u8; R] = from_fn(|r| t.block[(r0 + r) * cols * 2..].as_ptr());
    let hi_ptr: [*const u8; Q] = from_fn(|q| t.hi[(q0 + q) * cols..].as_ptr().cast());
    let lo_ptr: [*const u8; Q] = from_fn(|q| t.lo[(q0 + q) * cols..].as_ptr().cast());
    assert!(!NORMS || r0 + R <= norms.len());
    let mut acc = [[_mm512_setzero_ps(); Q]; R];
    let mut norm_acc = [_mm512_setzero_ps(); R];
    let ahead = q0 == 0;
    for c in (0..cols).step_by(32) {
        let mask = chunk_mask(cols, c);
        if ahead {
            for &p in &row_ptr {
                prefetch_ahead(p.wrapping_add(2 * c));
            }
        }
        // SAFETY: the asserts above put columns c..min(c + 32, cols) of rows
        // r0..r0 + R and of queries q0..q0 + Q inside `block`, `hi` and `lo`;
        // `mask` selects exactly those columns.
        let x: [__m512bh; R] = from_fn(|r| unsafe { load_bf16(row_ptr[r].add(2 * c), mask) });
        for q in 0..Q {
            // SAFETY: as above.
            let h = unsafe { load_bf16(hi_ptr[q].add(2 * c), mask) };
            for r in 0..R {
                acc[r][q] = _mm512_dpbf16_ps(acc[r][q], x[r], h);
            }
            if LO {
                // SAFETY: as above.
                let l = unsafe { load_bf16(lo_ptr[q].add(2 * c), mask) };
                for r in 0..R {
                    acc[r][q] = _mm512_dpbf16_ps(acc[r][q], x[r], l);
                }
            }
        }
        if NORMS {
            for r in 0..R {
                norm_acc[r] = _mm512_dpbf16_ps(norm_acc[r], x[r], x[r]);
            }
        }
    }
    for r in 0..R {
        for q in 0..Q {
            dots[(r0 + r) * nq + q0 + q] = _mm512_reduce_add_ps(acc[r][q]);
        }
        if NORMS {
            norms[r0 + r] = _mm512_reduce_add_ps(norm_acc[r]);
        }
    }
}
