//! The AVX-512F kernel (`avx512`): FMA tiles on the stored bytes of BF16,
//! F16 and F32 rows (widened in registers) and of GGUF `Q8_0` rows
//! (decoded in registers), and from `PANEL_QUERIES` queries on,
//! panels on blocks converted to f32.
//!
//! Each block is cut into register tiles of `R` rows × `Q` queries; a tile
//! keeps `R * Q` (plus `R` norm) accumulators in registers while it walks the
//! columns, so every loaded vector feeds several independent FMAs. Every
//! accumulator sees the same sequence of operations whatever the tile shape,
//! so a row's score does not depend on where it falls in a block. The
//! panels hold 16 queries per vector lane and broadcast each row value, a
//! small matrix product with no horizontal sums, walked in 128-column
//! slices that stay in L1.
//!
//! The public-in-crate functions are safe: each checks the CPU features it
//! needs before entering `#[target_feature]` code.

use std::arch::x86_64::*;
use std::array::from_fn;

use super::stored::{BF16, Block, F16, F32, Q8_0, byte_of, f32_bytes, prefetch_first_read};
use crate::cpu::has_avx512;

/// Converts little-endian BF16 values (`bytes`, any alignment) to f32
/// (exactly: a BF16 value is the high half of an f32), AVX-512F.
pub(super) fn bf16_to_f32(bytes: &[u8], out: &mut [f32]) {
    widen::<BF16>(bytes, out);
}

/// Converts little-endian F16 values (`bytes`, any alignment) to f32
/// (exactly, as `VCVTPH2PS` widens), AVX-512F.
pub(super) fn f16_to_f32(bytes: &[u8], out: &mut [f32]) {
    widen::<F16>(bytes, out);
}

/// `out` from the values of `bytes` stored as `KIND`, widened 16 at a time
/// as the in-place tiles widen them (see [`load`]).
fn widen<const KIND: u8>(bytes: &[u8], out: &mut [f32]) {
    assert!(has_avx512());
    assert_eq!(bytes.len(), 2 * out.len(), "lengths");
    // SAFETY: the CPU has AVX-512F (checked above).
    unsafe { widen_impl::<KIND>(bytes, out) }
}

#[target_feature(enable = "avx512f")]
fn widen_impl<const KIND: u8>(bytes: &[u8], out: &mut [f32]) {
    for (i, chunk) in out.chunks_mut(16).enumerate() {
        let mask = if chunk.len() == 16 {
            !0
        } else {
            (1u16 << chunk.len()) - 1
        };
        let x = load::<KIND>(bytes, 16 * i, mask);
        // SAFETY: `mask` selects the chunk's values, all inside `out`, and
        // suppresses the rest; storeu needs no alignment.
        unsafe { _mm512_mask_storeu_ps(chunk.as_mut_ptr(), mask, x) };
    }
}

/// Calls `$walk::<R, Q, $flags..>(args)` for a query tile of `$qn` (1 to 4)
/// queries: row tiles of 4 rows for 3–4 queries, 8 rows for 1–2.
macro_rules! dispatch {
    ($walk:ident::<$($flag:tt),*>, $qn:expr, ($($arg:expr),*)) => {
        match $qn {
            4 => $walk::<4, 4, $($flag),*>($($arg),*),
            3 => $walk::<4, 3, $($flag),*>($($arg),*),
            2 => $walk::<8, 2, $($flag),*>($($arg),*),
            _ => $walk::<8, 1, $($flag),*>($($arg),*),
        }
    };
}

/// Row norms and dot products for a block of f32 rows, AVX-512F path.
/// Layout as in `Queries::score_block`.
pub(super) fn block_f32_avx512(
    block: &[f32],
    cols: usize,
    queries: &[f32],
    norms: Option<&mut [f32]>,
    dots: &mut [f32],
) {
    block_avx512(f32_bytes(block), F32, cols, queries, norms, dots);
}

/// [`block_f32_avx512`] on the stored bytes of a block of rows stored as
/// `kind` (BF16 and F16 widened in registers): the same values in the same
/// order, so the same sums, without a converted copy.
pub(super) fn block_avx512(
    block: &[u8],
    kind: u8,
    cols: usize,
    queries: &[f32],
    norms: Option<&mut [f32]>,
    dots: &mut [f32],
) {
    match kind {
        BF16 => block_avx512_as::<BF16>(block, cols, queries, norms, dots),
        F16 => block_avx512_as::<F16>(block, cols, queries, norms, dots),
        F32 => block_avx512_as::<F32>(block, cols, queries, norms, dots),
        Q8_0 => block_avx512_as::<Q8_0>(block, cols, queries, norms, dots),
        _ => panic!("unknown row kind {kind}"),
    }
}

/// [`block_avx512`] for rows stored as `KIND`.
fn block_avx512_as<const KIND: u8>(
    block: &[u8],
    cols: usize,
    queries: &[f32],
    mut norms: Option<&mut [f32]>,
    dots: &mut [f32],
) {
    assert!(has_avx512());
    let b = Block::new(block, KIND, cols, queries, norms.as_deref(), dots);
    let nq = b.nq;
    if nq == 0 {
        if let Some(n) = norms {
            // SAFETY: the CPU has AVX-512F (checked above).
            unsafe { walk_f32::<8, 0, true, KIND>(&b, 0, n, dots) };
        }
        return;
    }
    let mut q0 = 0;
    while q0 < nq {
        let qn = (nq - q0).min(4);
        let with_norms = q0 == 0 && norms.is_some();
        let n: &mut [f32] = match norms.as_deref_mut() {
            Some(n) if with_norms => n,
            _ => &mut [],
        };
        // SAFETY: the CPU has AVX-512F (checked above).
        unsafe {
            match with_norms {
                true => dispatch!(walk_f32::<true, KIND>, qn, (&b, q0, n, dots)),
                false => dispatch!(walk_f32::<false, KIND>, qn, (&b, q0, n, dots)),
            }
        };
        q0 += qn;
    }
}

/// All row tiles of one query tile, rows stored as `KIND`.
#[target_feature(enable = "avx512f")]
fn walk_f32<const R: usize, const Q: usize, const NORMS: bool, const KIND: u8>(
    b: &Block,
    q0: usize,
    norms: &mut [f32],
    dots: &mut [f32],
) {
    let mut r0 = 0;
    while r0 + R <= b.rows {
        tile_f32::<R, Q, NORMS, KIND>(b, r0, q0, norms, dots);
        r0 += R;
    }
    for r in r0..b.rows {
        tile_f32::<1, Q, NORMS, KIND>(b, r, q0, norms, dots);
    }
}

/// Columns `c..c + 16` of a row stored as `KIND` (`row` holds the whole
/// row), as f32; columns past the row's end are 0.
#[target_feature(enable = "avx512f")]
#[inline]
fn load<const KIND: u8>(row: &[u8], c: usize, mask: __mmask16) -> __m512 {
    if KIND == Q8_0 {
        return load_q8_0(row, c);
    }
    if KIND == F32 {
        // SAFETY: `mask` selects the columns of c..c + 16 inside the row,
        // and suppresses the rest; loadu needs no alignment.
        return unsafe { _mm512_maskz_loadu_ps(mask, row.as_ptr().add(4 * c).cast()) };
    }
    let raw = if mask == !0 {
        // SAFETY: the 16 columns from c are inside the row (a whole step).
        unsafe { _mm256_loadu_si256(row.as_ptr().add(2 * c).cast()) }
    } else {
        let mut tail = [0u8; 32];
        let rest = &row[2 * c..];
        tail[..rest.len()].copy_from_slice(rest);
        // SAFETY: `tail` holds 32 bytes.
        unsafe { _mm256_loadu_si256(tail.as_ptr().cast()) }
    };
    if KIND == BF16 {
        _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(raw)))
    } else {
        _mm512_cvtph_ps(raw)
    }
}

/// The f16 at `b[i..i + 2]`, as f32 in every lane.
#[target_feature(enable = "avx512f")]
#[inline]
fn half_splat(b: &[u8], i: usize) -> __m512 {
    let bits = u16::from_le_bytes([b[i], b[i + 1]]);
    _mm512_cvtph_ps(_mm256_set1_epi16(bits as i16))
}

/// Columns `c..c + 16` of a `Q8_0` row: byte × scale, as
/// `matrix::quant` decodes them.
#[target_feature(enable = "avx512f")]
#[inline]
fn load_q8_0(row: &[u8], c: usize) -> __m512 {
    let at = byte_of(Q8_0, c);
    let b = &row[at..at + 34];
    let q = &b[2 + c % 32..2 + c % 32 + 16];
    // SAFETY: `q` holds the 16 bytes read; loadu needs no alignment.
    let q = _mm512_cvtepi8_epi32(unsafe { _mm_loadu_si128(q.as_ptr().cast()) });
    _mm512_mul_ps(_mm512_cvtepi32_ps(q), half_splat(b, 0))
}

/// One tile of `R` rows from `r0` × `Q` queries from `q0`, f32 FMA path.
#[target_feature(enable = "avx512f")]
fn tile_f32<const R: usize, const Q: usize, const NORMS: bool, const KIND: u8>(
    b: &Block,
    r0: usize,
    q0: usize,
    norms: &mut [f32],
    dots: &mut [f32],
) {
    let (cols, nq) = (b.cols, b.nq);
    let rows: [&[u8]; R] = b.row_tile(r0);
    assert!((q0 + Q) * cols <= b.queries.len());
    let q_ptr: [*const f32; Q] = from_fn(|q| b.queries[(q0 + q) * cols..].as_ptr());
    let mut acc = [[_mm512_setzero_ps(); Q]; R];
    let mut norm_acc = [_mm512_setzero_ps(); R];
    let mut c = 0;
    while c < cols {
        let mask: __mmask16 = if cols - c >= 16 {
            !0
        } else {
            (1u16 << (cols - c)) - 1
        };
        prefetch_first_read::<KIND>(&rows, q0, c);
        let x: [__m512; R] = from_fn(|r| load::<KIND>(rows[r], c, mask));
        for q in 0..Q {
            // SAFETY: the assert above puts columns c..min(c + 16, cols) of
            // queries q0..q0 + Q inside `queries`; `mask` selects exactly
            // those columns and suppresses the rest.
            let y = unsafe { _mm512_maskz_loadu_ps(mask, q_ptr[q].add(c)) };
            for r in 0..R {
                acc[r][q] = _mm512_fmadd_ps(x[r], y, acc[r][q]);
            }
        }
        if NORMS {
            for r in 0..R {
                norm_acc[r] = _mm512_fmadd_ps(x[r], x[r], norm_acc[r]);
            }
        }
        c += 16;
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

/// Columns per pass of the many-query kernel: a 64-query panel of this many
/// columns (32 KiB) stays in L1 while every row tile of the block uses it.
pub(super) const KC: usize = 128;

/// Queries laid out for [`block_f32_panels`]: column-major, `lanes` values
/// per column (the query count rounded up to 16, zero padded).
pub(super) struct Transposed {
    lanes: usize,
    values: Vec<f32>,
}

impl Transposed {
    /// Transposes `nq` queries of `cols` values stored back to back.
    pub(super) fn new(queries: &[f32], cols: usize) -> Self {
        let nq = queries.len() / cols;
        let lanes = nq.div_ceil(16) * 16;
        let mut values = vec![0.0; lanes * cols];
        for (q, query) in queries.chunks_exact(cols).enumerate() {
            for (k, &x) in query.iter().enumerate() {
                values[k * lanes + q] = x;
            }
        }
        Transposed { lanes, values }
    }
}

/// Dot products of a block of f32 rows with many queries, AVX-512F, as a
/// small matrix product: 16 queries per vector lane, each row value
/// broadcast, so no horizontal sums. Each product is summed in order over
/// [`KC`]-column slices and the slices' sums are added in order, whatever
/// the tile a row falls in. Norms come from the dot-style kernel.
pub(super) fn block_f32_panels(
    block: &[f32],
    cols: usize,
    queries: &Transposed,
    nq: usize,
    norms: Option<&mut [f32]>,
    dots: &mut [f32],
) {
    assert!(has_avx512());
    let lanes = queries.lanes;
    assert!(cols > 0 && nq <= lanes && queries.values.len() == lanes * cols);
    assert!(block.len().is_multiple_of(cols));
    let rows = block.len() / cols;
    assert_eq!(dots.len(), rows * nq, "dots length");
    if let Some(norms) = norms {
        block_f32_avx512(block, cols, &[], Some(norms), &mut []);
    }
    let mut sums = vec![0.0f32; rows * lanes];
    for k0 in (0..cols).step_by(KC) {
        let k1 = (k0 + KC).min(cols);
        for p0 in (0..lanes).step_by(64) {
            let vectors = ((lanes - p0) / 16).min(4);
            // SAFETY: the CPU has AVX-512F (checked above).
            unsafe {
                match vectors {
                    4 => walk_panel::<4>(block, cols, rows, k0..k1, queries, p0, &mut sums),
                    3 => walk_panel::<3>(block, cols, rows, k0..k1, queries, p0, &mut sums),
                    2 => walk_panel::<2>(block, cols, rows, k0..k1, queries, p0, &mut sums),
                    _ => walk_panel::<1>(block, cols, rows, k0..k1, queries, p0, &mut sums),
                }
            }
        }
    }
    for (out, sums) in dots
        .chunks_exact_mut(nq.max(1))
        .zip(sums.chunks_exact(lanes))
    {
        out.copy_from_slice(&sums[..nq]);
    }
}

/// Row tiles of 4 rows (then single rows) for one slice of columns and one
/// panel of `V * 16` queries.
#[target_feature(enable = "avx512f")]
fn walk_panel<const V: usize>(
    block: &[f32],
    cols: usize,
    rows: usize,
    ks: std::ops::Range<usize>,
    queries: &Transposed,
    p0: usize,
    sums: &mut [f32],
) {
    let mut r0 = 0;
    while r0 + 4 <= rows {
        panel_tile::<4, V>(block, cols, r0, ks.clone(), queries, p0, sums);
        r0 += 4;
    }
    for r in r0..rows {
        panel_tile::<1, V>(block, cols, r, ks.clone(), queries, p0, sums);
    }
}

/// `R` rows from `r0` × lanes `p0..p0 + 16 V` over columns `ks`, added to
/// `sums` (`rows × lanes`).
#[target_feature(enable = "avx512f")]
fn panel_tile<const R: usize, const V: usize>(
    block: &[f32],
    cols: usize,
    r0: usize,
    ks: std::ops::Range<usize>,
    queries: &Transposed,
    p0: usize,
    sums: &mut [f32],
) {
    let lanes = queries.lanes;
    assert!(ks.end <= cols && (r0 + R) * cols <= block.len());
    assert!(p0 + 16 * V <= lanes && (r0 + R) * lanes <= sums.len());
    let q = queries.values[ks.start * lanes + p0..].as_ptr();
    let x: [*const f32; R] = from_fn(|r| block[(r0 + r) * cols + ks.start..].as_ptr());
    let mut acc = [[_mm512_setzero_ps(); V]; R];
    for k in 0..ks.len() {
        // SAFETY: column ks.start + k < cols and lanes p0..p0 + 16 V <= lanes,
        // so the 16 V values read lie inside `queries.values` (length
        // lanes * cols); loadu has no alignment requirement.
        let y: [__m512; V] = from_fn(|v| unsafe { _mm512_loadu_ps(q.add(k * lanes + 16 * v)) });
        for r in 0..R {
            // SAFETY: row r0 + r < rows and column ks.start + k < cols, inside
            // `block` by the assert above.
            let a = _mm512_set1_ps(unsafe { *x[r].add(k) });
            for v in 0..V {
                acc[r][v] = _mm512_fmadd_ps(a, y[v], acc[r][v]);
            }
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        for (v, acc) in acc.iter().enumerate() {
            let at = (r0 + r) * lanes + p0 + 16 * v;
            let out = &mut sums[at..at + 16];
            // SAFETY: `out` holds exactly 16 f32s.
            unsafe {
                let sum = _mm512_add_ps(_mm512_loadu_ps(out.as_ptr()), *acc);
                _mm512_storeu_ps(out.as_mut_ptr(), sum);
            }
        }
    }
}
