//! The AVX2 kernel (`avx2`, AVX2 + FMA + F16C): the block arithmetic on
//! the stored bytes of BF16, F16 and F32 matrices, and of GGUF `Q8_0` ones,
//! with no converted copy of the block; other dtypes are converted to f32
//! first and read as F32 rows.
//!
//! A step is 16 columns. For BF16 one 32-byte load holds them, and its
//! eight 32-bit lanes are decoded in registers: shifted left by 16 they
//! are the even-indexed values, masked to their high halves the odd ones
//! (a BF16 value is the high half of the f32 with the same bits, so both
//! are exact). The queries are stored in that order: per step, the even
//! values, then the odd ones. For F16 a step is two 16-byte loads widened
//! exactly by F16C (`VCVTPH2PS`), for F32 two loads, and the queries stay
//! in column order; for `Q8_0` the step is half a block, its 16 bytes widened
//! and multiplied by the block's scale as `matrix::quant` decodes them, the
//! queries in column order. Tiles of `R` rows × `Q` queries keep their sums in
//! registers, each row decoded once for all the tile's queries; the
//! columns past the last whole step are added one by one at the end.

use std::arch::x86_64::*;
use std::array::from_fn;

use super::stored::{self, BF16, Block, F16, F32, Q8_0, byte_of, prefetch_first_read};
use crate::cpu::{has_avx2, has_f16c};
use crate::dtype::Dtype;

/// Columns per step.
const STEP: usize = 16;

/// Queries laid out for [`block`] (see the module docs).
pub(super) struct Layout {
    values: Vec<f32>,
    /// The rows' stored form (see `stored::F32`).
    kind: u8,
    cols: usize,
}

impl Layout {
    /// `queries` (`cols` values each, back to back) laid out for rows of
    /// `dtype`; `None` for dtypes the kernel does not read in place (they
    /// are converted to f32 first).
    pub(super) fn new(queries: &[f32], cols: usize, dtype: Dtype) -> Option<Self> {
        let kind = stored::kind(dtype).or_else(|| stored::quant_kind(dtype))?;
        let mut values = queries.to_vec();
        if dtype == Dtype::BF16 {
            for (query, out) in queries
                .chunks_exact(cols)
                .zip(values.chunks_exact_mut(cols))
            {
                let whole = cols / STEP * STEP;
                for (step, o) in query[..whole]
                    .chunks_exact(STEP)
                    .zip(out[..whole].chunks_exact_mut(STEP))
                {
                    for l in 0..STEP / 2 {
                        o[l] = step[2 * l];
                        o[STEP / 2 + l] = step[2 * l + 1];
                    }
                }
            }
        }
        Some(Layout { values, kind, cols })
    }

    /// The rounding depth of the sums (see `Kernel::depth`): a lane adds
    /// two products per step, then 3 levels add the 8 lanes, then the
    /// tail's products are added in turn.
    pub(super) fn depth(cols: usize) -> usize {
        2 * cols.div_ceil(STEP) + 3 + STEP + 1
    }
}

/// Fills `dots[i * nq + q]` with query `q` · row `i` of `bytes` (whole rows
/// of the layout's dtype and columns), and `norms[i]` when given with the
/// row's squared norm.
pub(super) fn block(
    bytes: &[u8],
    queries: &Layout,
    mut norms: Option<&mut [f32]>,
    dots: &mut [f32],
) {
    assert!(has_avx2() && has_f16c());
    let kind = queries.kind;
    let q = Block::new(
        bytes,
        kind,
        queries.cols,
        &queries.values,
        norms.as_deref(),
        dots,
    );
    let nq = q.nq;
    if nq == 0 {
        if let Some(n) = norms {
            // SAFETY: the CPU has AVX2, FMA and F16C (checked above).
            unsafe { walk::<4, 0, true>(&q, kind, 0, n, dots) };
        }
        return;
    }
    let mut q0 = 0;
    while q0 < nq {
        let qn = (nq - q0).min(4);
        let n: &mut [f32] = match norms.as_deref_mut() {
            Some(n) if q0 == 0 => n,
            _ => &mut [],
        };
        // SAFETY: the CPU has AVX2, FMA and F16C (checked above).
        unsafe {
            match (qn, n.is_empty()) {
                (4, false) => walk::<2, 4, true>(&q, kind, q0, n, dots),
                (4, true) => walk::<2, 4, false>(&q, kind, q0, n, dots),
                (3, false) => walk::<2, 3, true>(&q, kind, q0, n, dots),
                (3, true) => walk::<2, 3, false>(&q, kind, q0, n, dots),
                (2, false) => walk::<4, 2, true>(&q, kind, q0, n, dots),
                (2, true) => walk::<4, 2, false>(&q, kind, q0, n, dots),
                (_, false) => walk::<4, 1, true>(&q, kind, q0, n, dots),
                (_, true) => walk::<4, 1, false>(&q, kind, q0, n, dots),
            }
        }
        q0 += qn;
    }
}

/// All row tiles of the query tile `q0..q0 + Q`.
#[target_feature(enable = "avx2,fma,f16c")]
fn walk<const R: usize, const Q: usize, const NORMS: bool>(
    t: &Block,
    kind: u8,
    q0: usize,
    norms: &mut [f32],
    dots: &mut [f32],
) {
    let mut r0 = 0;
    while r0 + R <= t.rows {
        match kind {
            BF16 => tile::<R, Q, NORMS, BF16>(t, r0, q0, norms, dots),
            F16 => tile::<R, Q, NORMS, F16>(t, r0, q0, norms, dots),
            Q8_0 => tile::<R, Q, NORMS, Q8_0>(t, r0, q0, norms, dots),
            _ => tile::<R, Q, NORMS, F32>(t, r0, q0, norms, dots),
        }
        r0 += R;
    }
    for r in r0..t.rows {
        match kind {
            BF16 => tile::<1, Q, NORMS, BF16>(t, r, q0, norms, dots),
            F16 => tile::<1, Q, NORMS, F16>(t, r, q0, norms, dots),
            Q8_0 => tile::<1, Q, NORMS, Q8_0>(t, r, q0, norms, dots),
            _ => tile::<1, Q, NORMS, F32>(t, r, q0, norms, dots),
        }
    }
}

/// Value `j` of a row's bytes, stored as `KIND` (for the columns past the
/// last whole step, which a `Q8_0` row, whole blocks of 32, never has).
#[inline(always)]
fn value<const KIND: u8>(row: &[u8], j: usize) -> f32 {
    match KIND {
        Q8_0 => unreachable!("Q8_0 rows are whole steps"),
        BF16 => f32::from_bits(u32::from(u16::from_le_bytes([row[2 * j], row[2 * j + 1]])) << 16),
        F16 => half::f16::from_le_bytes([row[2 * j], row[2 * j + 1]]).to_f32(),
        _ => f32::from_le_bytes(row[4 * j..4 * j + 4].try_into().expect("4 bytes")),
    }
}

/// The sum of the eight lanes of `v`.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn reduce(v: __m256) -> f32 {
    let four = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
    let two = _mm_add_ps(four, _mm_movehl_ps(four, four));
    _mm_cvtss_f32(_mm_add_ss(two, _mm_movehdup_ps(two)))
}

/// One tile: rows `r0..r0 + R` × queries `q0..q0 + Q`, rows stored as
/// `KIND`.
#[target_feature(enable = "avx2,fma,f16c")]
fn tile<const R: usize, const Q: usize, const NORMS: bool, const KIND: u8>(
    t: &Block,
    r0: usize,
    q0: usize,
    norms: &mut [f32],
    dots: &mut [f32],
) {
    let cols = t.cols;
    let whole = cols / STEP * STEP;
    let rows: [&[u8]; R] = t.row_tile(r0);
    let qs: [&[f32]; Q] = from_fn(|q| &t.queries[(q0 + q) * cols..(q0 + q + 1) * cols]);
    let high = _mm256_set1_epi32(0xFFFF_0000_u32 as i32);
    let mut acc = [[_mm256_setzero_ps(); Q]; R];
    let mut norm_acc = [_mm256_setzero_ps(); R];
    let mut c = 0;
    while c < whole {
        prefetch_first_read::<KIND>(&rows, q0, c);
        // SAFETY: `c + STEP <= cols`, so the loads below read columns
        // c..c + 16 of rows and queries that hold `cols` values each (the
        // slices above are exactly one row or query long); loadu needs no
        // alignment.
        let x: [(__m256, __m256); R] = from_fn(|r| unsafe {
            match KIND {
                BF16 => {
                    let raw = _mm256_loadu_si256(rows[r].as_ptr().add(2 * c).cast());
                    (
                        _mm256_castsi256_ps(_mm256_slli_epi32::<16>(raw)),
                        _mm256_castsi256_ps(_mm256_and_si256(raw, high)),
                    )
                }
                Q8_0 => {
                    // The block's scale, then its 16 bytes from column c.
                    let b = rows[r].as_ptr().add(byte_of(Q8_0, c));
                    let d = i16::from_le_bytes([*b, *b.add(1)]);
                    let d = _mm256_cvtph_ps(_mm_set1_epi16(d));
                    let q = _mm_loadu_si128(b.add(2 + c % 32).cast());
                    let lo = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
                    let hi = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128::<8>(q)));
                    (_mm256_mul_ps(lo, d), _mm256_mul_ps(hi, d))
                }
                F16 => {
                    let p = rows[r].as_ptr().add(2 * c).cast::<__m128i>();
                    (
                        _mm256_cvtph_ps(_mm_loadu_si128(p)),
                        _mm256_cvtph_ps(_mm_loadu_si128(p.add(1))),
                    )
                }
                _ => {
                    let p = rows[r].as_ptr().add(4 * c).cast::<f32>();
                    (_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8)))
                }
            }
        });
        for q in 0..Q {
            // SAFETY: as above.
            let (ya, yb) = unsafe {
                let p = qs[q].as_ptr().add(c);
                (_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8)))
            };
            for r in 0..R {
                acc[r][q] = _mm256_fmadd_ps(x[r].0, ya, acc[r][q]);
                acc[r][q] = _mm256_fmadd_ps(x[r].1, yb, acc[r][q]);
            }
        }
        if NORMS {
            for r in 0..R {
                norm_acc[r] = _mm256_fmadd_ps(x[r].0, x[r].0, norm_acc[r]);
                norm_acc[r] = _mm256_fmadd_ps(x[r].1, x[r].1, norm_acc[r]);
            }
        }
        c += STEP;
    }
    for r in 0..R {
        for q in 0..Q {
            let mut sum = reduce(acc[r][q]);
            for (j, y) in qs[q].iter().enumerate().skip(whole) {
                sum = value::<KIND>(rows[r], j).mul_add(*y, sum);
            }
            dots[(r0 + r) * t.nq + q0 + q] = sum;
        }
        if NORMS {
            let mut sum = reduce(norm_acc[r]);
            for j in whole..cols {
                let x = value::<KIND>(rows[r], j);
                sum = x.mul_add(x, sum);
            }
            norms[r0 + r] = sum;
        }
    }
}
