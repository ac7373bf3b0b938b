//! The VNNI kernel's SIMD code: quantizing a row, the register-blocked
//! int8 tiles, and the AVX-512 BF16 refinement of one row and query.
//!
//! A tile is 4 rows × 6 queries (8 × 2 or 6 × 4 for fewer queries): per
//! 64-column step each row vector is loaded once for all the tile's
//! queries and each query vector once for all its rows, into 24 i32
//! accumulators held in registers. Query tiles are the outer loop, so a
//! tile's queries (24 KiB for 4096 columns) stay in L1 while the block's
//! rows stream from L2; rows and queries lie a chunk more than their width
//! apart, so the same column of all of them does not fall in one L1 set.
//! Meanwhile the tiles prefetch the next block's stored rows into L2, an
//! equal share of cache lines per tile spread over its steps, so that
//! quantizing that block does not wait on memory.
//!
//! Every function here is `#[target_feature]`; the caller (`avx512vnni`) checks
//! the CPU first.

use std::arch::x86_64::*;
use std::array::from_fn;

use super::super::avx512bf16::{Halves, chunk_mask, load_bf16};
use super::{CHUNK, QUERY_TILE, RowQuant, TINY};

/// Quantizes one stored BF16 row (`row`, `cols` values) into `out` (its
/// width, as `r^ + 128`), with its squared norms.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
pub(super) fn quantize_row(row: &[u8], cols: usize, out: &mut [u8]) -> RowQuant {
    assert!(row.len() == 2 * cols && out.len() == cols.div_ceil(CHUNK) * CHUNK);
    let p = row.as_ptr();
    // The largest |value| from the bits: for finite values, the order of
    // the magnitudes' bit patterns is the order of the magnitudes. Whole
    // chunks in two running maxima, then the rest masked.
    let magnitudes = _mm512_set1_epi16(0x7fff);
    let mut mx = [_mm512_setzero_si512(); 2];
    let whole = cols / CHUNK * CHUNK;
    for c in (0..whole).step_by(CHUNK) {
        for (half, mx) in mx.iter_mut().enumerate() {
            // SAFETY: columns c..c + 64 lie inside `row`.
            let v = unsafe { _mm512_loadu_si512(p.add(2 * c + 64 * half).cast()) };
            *mx = _mm512_max_epu16(*mx, _mm512_and_si512(v, magnitudes));
        }
    }
    for c in (whole..cols).step_by(32) {
        // SAFETY: the mask selects columns c..min(c + 32, cols), inside `row`.
        let v = unsafe { _mm512_maskz_loadu_epi16(chunk_mask(cols, c), p.add(2 * c).cast()) };
        mx[0] = _mm512_max_epu16(mx[0], _mm512_and_si512(v, magnitudes));
    }
    let mx = _mm512_max_epu16(mx[0], mx[1]);
    let lo = _mm512_and_si512(mx, _mm512_set1_epi32(0xffff));
    let max_bits = _mm512_reduce_max_epu32(_mm512_max_epu32(lo, _mm512_srli_epi32(mx, 16)));
    let max = f32::from_bits(max_bits << 16);
    let sure = max_bits < 0x7f80 && max >= TINY;
    // `inv` a hair below 127 / max, so |x * inv| rounds to at most 127.
    let (scale, inv) = if sure {
        (max / 127.0, 127.0 / max * (1.0 - 1.0 / (1u32 << 20) as f32))
    } else {
        (0.0, 0.0)
    };
    let (vscale, vinv) = (_mm512_set1_ps(scale), _mm512_set1_ps(inv));
    // `x * inv + MAGIC` rounds `x * inv` to the nearest integer `i` once,
    // leaving `i + 128` in the low byte of its bits and `i` in `y - MAGIC`
    // (exact): no conversions to and from integers.
    let magic = _mm512_set1_ps(MAGIC);
    // The low byte of value `e` of vector `j` (see below) to column
    // `32 * (j / 2) + 2 * e + j % 2`: lanes 0..31 of `perm(v0, v1)` and
    // 32..63 of `perm(v2, v3)` are the chunk's columns in order.
    // SAFETY: `PICK` is 64 bytes.
    let index = unsafe { _mm512_loadu_si512(PICK.as_ptr().cast()) };
    let mut q = Quantizer {
        vscale,
        vinv,
        magic,
        index,
        norm: [_mm512_setzero_ps(); 4],
        err: [_mm512_setzero_ps(); 4],
    };
    // Whole chunks with plain loads, then the last one masked.
    for c in (0..whole).step_by(CHUNK) {
        // SAFETY: columns c..c + 64 lie inside `row` and `out`.
        unsafe { q.chunk(p.add(2 * c), [!0; 2], out.as_mut_ptr().add(c)) };
    }
    if whole < out.len() {
        let mask = |c: usize| if c < cols { chunk_mask(cols, c) } else { 0 };
        // SAFETY: the masks select the columns from `whole` inside `row`;
        // `out` holds whole chunks.
        unsafe {
            let masks = [mask(whole), mask(whole + 32)];
            q.chunk(p.add(2 * whole), masks, out.as_mut_ptr().add(whole));
        }
    }
    let sum = |a: [__m512; 4]| {
        _mm512_reduce_add_ps(_mm512_add_ps(
            _mm512_add_ps(a[0], a[1]),
            _mm512_add_ps(a[2], a[3]),
        ))
    };
    RowQuant {
        sure,
        scale,
        norm2: sum(q.norm),
        err2: sum(q.err),
    }
}

/// The constants and sums of `quantize_row`.
struct Quantizer {
    vscale: __m512,
    vinv: __m512,
    magic: __m512,
    index: __m512i,
    norm: [__m512; 4],
    err: [__m512; 4],
}

impl Quantizer {
    /// Quantizes the 64 columns of one chunk at `src` (the columns of each
    /// half selected by `masks`, the others zero) into the 64 bytes at
    /// `out`, adding to the squared norms.
    ///
    /// # Safety
    /// The CPU has AVX-512F, BW and VBMI; the selected columns are
    /// readable and the 64 bytes at `out` writable.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    unsafe fn chunk(&mut self, src: *const u8, masks: [__mmask32; 2], out: *mut u8) {
        let mut ints = [_mm512_setzero_si512(); 4];
        for (half, mask) in masks.into_iter().enumerate() {
            // SAFETY: the caller's.
            let v = unsafe { _mm512_maskz_loadu_epi16(mask, src.add(64 * half).cast()) };
            // The even columns, then the odd ones, as f32 (one instruction
            // each: a BF16 value is the high half of an f32).
            let parts = [
                _mm512_slli_epi32::<16>(v),
                _mm512_and_si512(v, _mm512_set1_epi32(-0x1_0000)),
            ];
            for (k, part) in parts.into_iter().enumerate() {
                let j = 2 * half + k;
                let x = _mm512_castsi512_ps(part);
                self.norm[j] = _mm512_fmadd_ps(x, x, self.norm[j]);
                let y = _mm512_fmadd_ps(x, self.vinv, self.magic);
                let e = _mm512_fnmadd_ps(_mm512_sub_ps(y, self.magic), self.vscale, x);
                self.err[j] = _mm512_fmadd_ps(e, e, self.err[j]);
                ints[j] = _mm512_castps_si512(y);
            }
        }
        let low = _mm512_permutex2var_epi8(ints[0], self.index, ints[1]);
        let high = _mm512_permutex2var_epi8(ints[2], self.index, ints[3]);
        let bytes = _mm512_mask_blend_epi8(!0 << 32, low, high);
        // SAFETY: the caller's.
        unsafe { _mm512_storeu_si512(out.cast(), bytes) };
    }
}

/// `1.5 * 2^23 + 128`: f32 values near it are spaced 1 apart, and the low
/// byte of its bits is 128.
const MAGIC: f32 = 12_583_040.0;

/// Per output byte `p` of a chunk, the byte of `(v0, v1)` (or `(v2, v3)`)
/// holding its column: vector `p % 2`, value `p % 32 / 2`, low byte.
const PICK: [u8; CHUNK] = {
    let mut pick = [0; CHUNK];
    let mut p = 0;
    while p < CHUNK {
        pick[p] = (64 * (p % 2) + 4 * (p % 32 / 2)) as u8;
        p += 1;
    }
    pick
};

/// Every row tile of the quantized block against every query tile:
/// `dots[i * nq + q]` = the VNNI sum of quantized row `i` and query `q`.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub(super) fn walk(t: &Tiles, rows: usize, dots: &mut [i32]) {
    let nq = t.nq;
    assert!(t.block.len() >= rows * t.stride && t.hat.len() == nq * t.stride);
    assert!(dots.len() == rows * nq && t.width.is_multiple_of(CHUNK) && t.width <= t.stride);
    let row_tile = match nq {
        0..=2 => 8,
        3..=4 => 6,
        _ => 4,
    };
    // The next block's stored rows are prefetched into L2 across the
    // tiles, an equal share per tile, so that quantizing them later does
    // not wait on memory.
    let calls = nq.div_ceil(QUERY_TILE) * (rows / row_tile + rows % row_tile);
    let share = t.ahead.len().div_ceil(calls.max(1)).next_multiple_of(64);
    let mut ahead = t.ahead;
    // Query tiles outside: a tile's queries stay in L1 while the block's
    // rows stream from L2, fewer bytes per step than the other way round.
    let mut q0 = 0;
    while q0 < nq {
        let qn = (nq - q0).min(QUERY_TILE);
        let mut r0 = 0;
        while r0 < rows {
            let rn = if rows - r0 >= row_tile { row_tile } else { 1 };
            let (pf, rest) = ahead.split_at(share.min(ahead.len()));
            ahead = rest;
            macro_rules! tiles {
                ($(($r:literal, $q:literal)),*) => {
                    match (rn, qn) {
                        $(($r, $q) => tile::<$r, $q>(t, r0, q0, pf, dots),)*
                        _ => unreachable!("tile {rn} x {qn}"),
                    }
                };
            }
            tiles!(
                (8, 1),
                (8, 2),
                (6, 3),
                (6, 4),
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
            r0 += rn;
        }
        q0 += qn;
    }
}

/// Query `q`'s dot product with one stored BF16 row (`row`, `cols`
/// values), as `row . hi + row . lo` (`row . hi` alone for a query exact
/// in BF16): AVX-512 BF16 in four accumulators taking 32 columns in turn,
/// then summed (see `Kernel::depth`).
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
pub(super) fn refine(row: &[u8], cols: usize, queries: &Halves, q: usize) -> f32 {
    let span = q * cols..(q + 1) * cols;
    let (hi, lo) = (&queries.hi[span.clone()], &queries.lo[span]);
    assert_eq!(row.len(), 2 * cols);
    let (rp, hp, lp) = (
        row.as_ptr(),
        hi.as_ptr().cast::<u8>(),
        lo.as_ptr().cast::<u8>(),
    );
    let with_lo = !queries.exact[q];
    let mut acc = [_mm512_setzero_ps(); 4];
    for g in (0..cols).step_by(128) {
        for (j, acc) in acc.iter_mut().enumerate() {
            let c = g + 32 * j;
            if c >= cols {
                break;
            }
            let mask = chunk_mask(cols, c);
            // SAFETY: `mask` selects columns c..min(c + 32, cols), inside
            // `row`, `hi` and `lo` (checked above).
            let x = unsafe { load_bf16(rp.add(2 * c), mask) };
            // SAFETY: as above.
            *acc = _mm512_dpbf16_ps(*acc, x, unsafe { load_bf16(hp.add(2 * c), mask) });
            if with_lo {
                // SAFETY: as above.
                *acc = _mm512_dpbf16_ps(*acc, x, unsafe { load_bf16(lp.add(2 * c), mask) });
            }
        }
    }
    _mm512_reduce_add_ps(_mm512_add_ps(
        _mm512_add_ps(acc[0], acc[1]),
        _mm512_add_ps(acc[2], acc[3]),
    ))
}

/// What every tile of one block reads.
pub(super) struct Tiles<'a> {
    /// The quantized rows, `stride` bytes apart.
    pub(super) block: &'a [u8],
    /// The bytes of a row or query that count (a multiple of 64).
    pub(super) width: usize,
    pub(super) stride: usize,
    /// The quantized queries, `stride` bytes apart.
    pub(super) hat: &'a [i8],
    pub(super) nq: usize,
    /// Bytes to prefetch into L2 meanwhile (the next block's stored rows).
    pub(super) ahead: &'a [u8],
}

/// One tile of `R` rows from `r0` × `Q` queries from `q0`, 64 columns per
/// step into `R × Q` i32 accumulators, prefetching the cache lines of `pf`
/// into L2 spread over the steps.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
fn tile<const R: usize, const Q: usize>(
    t: &Tiles,
    r0: usize,
    q0: usize,
    pf: &[u8],
    dots: &mut [i32],
) {
    let (width, stride, nq) = (t.width, t.stride, t.nq);
    assert!((r0 + R) * stride <= t.block.len() && (q0 + Q) * stride <= t.hat.len());
    assert!((r0 + R - 1) * nq + q0 + Q <= dots.len());
    let row_ptr: [*const u8; R] = from_fn(|r| t.block[(r0 + r) * stride..].as_ptr());
    let hat_ptr: [*const i8; Q] = from_fn(|q| t.hat[(q0 + q) * stride..].as_ptr());
    let mut acc = [[_mm512_setzero_si512(); Q]; R];
    let per = pf.len().div_ceil(64).div_ceil(width / CHUNK);
    let mut lines = pf.chunks(64);
    for c in (0..width).step_by(CHUNK) {
        for line in lines.by_ref().take(per) {
            _mm_prefetch::<_MM_HINT_T1>(line.as_ptr().cast());
        }
        // SAFETY: the asserts above put bytes c..c + 64 of rows r0..r0 + R
        // and of queries q0..q0 + Q inside `block` and `hat`.
        let x: [__m512i; R] = from_fn(|r| unsafe { _mm512_loadu_si512(row_ptr[r].add(c).cast()) });
        for q in 0..Q {
            // SAFETY: as above.
            let h = unsafe { _mm512_loadu_si512(hat_ptr[q].add(c).cast()) };
            for r in 0..R {
                acc[r][q] = _mm512_dpbusd_epi32(acc[r][q], x[r], h);
            }
        }
    }
    // Four queries of a row per transposing reduction; the last Q % 4
    // queries of 4 / (Q % 4) rows together when they make 4.
    let (whole, rest) = (Q / 4 * 4, Q % 4);
    for (r, acc) in acc.iter().enumerate() {
        let out = &mut dots[(r0 + r) * nq + q0..][..whole];
        for (g, four) in out.as_chunks_mut::<4>().0.iter_mut().enumerate() {
            let sums = reduce4(acc[4 * g], acc[4 * g + 1], acc[4 * g + 2], acc[4 * g + 3]);
            // SAFETY: `four` is 4 i32s, 16 bytes; storeu needs no alignment.
            unsafe { _mm_storeu_si128(four.as_mut_ptr().cast(), sums) };
        }
    }
    let at = |r: usize, q: usize| (r0 + r) * nq + q0 + q;
    if rest == 2 && R.is_multiple_of(2) {
        for r in (0..R).step_by(2) {
            let (a, b) = (&acc[r], &acc[r + 1]);
            let mut sums = [0i32; 4];
            let four = reduce4(a[whole], a[whole + 1], b[whole], b[whole + 1]);
            // SAFETY: `sums` is 4 i32s, 16 bytes; storeu needs no alignment.
            unsafe { _mm_storeu_si128(sums.as_mut_ptr().cast(), four) };
            dots[at(r, whole)..][..2].copy_from_slice(&sums[..2]);
            dots[at(r + 1, whole)..][..2].copy_from_slice(&sums[2..]);
        }
    } else if rest == 1 && R.is_multiple_of(4) {
        for r in (0..R).step_by(4) {
            let mut sums = [0i32; 4];
            let four = reduce4(
                acc[r][whole],
                acc[r + 1][whole],
                acc[r + 2][whole],
                acc[r + 3][whole],
            );
            // SAFETY: as above.
            unsafe { _mm_storeu_si128(sums.as_mut_ptr().cast(), four) };
            for (k, &sum) in sums.iter().enumerate() {
                dots[at(r + k, whole)] = sum;
            }
        }
    } else {
        for (r, acc) in acc.iter().enumerate() {
            for q in whole..Q {
                dots[at(r, q)] = _mm512_reduce_add_epi32(acc[q]);
            }
        }
    }
}

/// The sums of the lanes of `a`, `b`, `c` and `d`, in that order: a
/// transposing tree, cheaper than four separate reductions.
#[inline]
#[target_feature(enable = "avx512f")]
fn reduce4(a: __m512i, b: __m512i, c: __m512i, d: __m512i) -> __m128i {
    // Per 128-bit lane: (a0 + a2, b0 + b2, a1 + a3, b1 + b3), likewise c, d.
    let ab = _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
    let cd = _mm512_add_epi32(_mm512_unpacklo_epi32(c, d), _mm512_unpackhi_epi32(c, d));
    // Per 128-bit lane: the partial sums of a, b, c, d.
    let s = _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd));
    let s = _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64::<1>(s));
    _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256::<1>(s))
}
