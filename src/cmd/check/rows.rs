//! What the value pass learns about each row, straight from its stored
//! bytes: the sum of squares, whether it holds NaN, infinities or only
//! zeros, a key for finding duplicates ([`row_key`]: a hash of short
//! rows, of the sum and a few sampled words of long ones, so that the pass
//! costs little more than reading the bytes), and when asked, the dot
//! product with one vector (the embedding's reference mean, for the
//! `undertrained-candidates` finding), in the same read.
//!
//! BF16 and F32 rows are read in place; other dtypes are converted to f32
//! a row at a time. Only the sum of squares is computed for every row: a
//! NaN or an infinity shows in it, and so does a zero row, so only rows
//! whose sum is 0, NaN or infinite are looked at value by value. The loops
//! are plain Rust, compiled as well for AVX-512 and for AVX2 + FMA, and the
//! widest the CPU has is chosen at run time (`cpu::RowBuild`, as for
//! `undertrained`'s passes). With the dot product, BF16 and F32
//! rows ask for their bytes further on as they are read (see
//! `kernel::dots_each`). Sums are made by
//! `undertrained`'s row kernel (`kernel::dots`), in f32 in 32 lanes, value
//! `j` of each step of 32 in lane `j`, and the lanes added in order, so
//! that both commands get the same sums; the norm is redone in f64 when
//! f32 overflows or underflows.

use crate::cmd::undertrained::kernel::{Bf16, L as LANES, Row, dots, dots_each};
use crate::cpu::{Isa, PORTABLE_FUSES, RowBuild};
use crate::dtype::Dtype;
use crate::matrix::convert;

/// One row's summary.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct RowSummary {
    /// The L2 norm; NaN when the row holds NaN or an infinity.
    pub norm: f32,
    /// The sum of squares as summed in f32 (infinite or 0 where the norm
    /// was redone in f64).
    pub sq: f32,
    /// The dot product with the dotted vector (0 without one).
    pub dot: f32,
    /// The row holds a NaN.
    pub nan: bool,
    /// The row holds an infinity.
    pub inf: bool,
    /// Every value is +0 or -0.
    pub zero: bool,
    /// The row's duplicate key (see [`row_key`]): equal rows have equal
    /// keys, different rows may too.
    pub hash: u64,
}

/// Summaries of the whole rows of `cols` values of `dtype` stored in `raw`,
/// appended to `out`, with each row's dot product with `dotted` when
/// given (of `cols` values); `scratch` is a buffer for conversions.
///
/// As for a [`Matrix`](crate::matrix::Matrix): `dtype` is one it reads,
/// `cols` is not 0, and `raw.len()` is a multiple of the row size.
pub(crate) fn summarize(
    dtype: Dtype,
    cols: usize,
    raw: &[u8],
    dotted: Option<&[f32]>,
    scratch: &mut Vec<f32>,
    out: &mut Vec<RowSummary>,
) {
    match RowBuild::detect().isa() {
        // SAFETY: a `RowBuild` runs only on a CPU with its instructions.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { summarize_avx512(dtype, cols, raw, dotted, scratch, out) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { summarize_avx2(dtype, cols, raw, dotted, scratch, out) },
        _ => summarize_with::<PORTABLE_FUSES>(dtype, cols, raw, dotted, scratch, out),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,fma")]
fn summarize_avx512(
    dtype: Dtype,
    cols: usize,
    raw: &[u8],
    dotted: Option<&[f32]>,
    scratch: &mut Vec<f32>,
    out: &mut Vec<RowSummary>,
) {
    summarize_with::<true>(dtype, cols, raw, dotted, scratch, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn summarize_avx2(
    dtype: Dtype,
    cols: usize,
    raw: &[u8],
    dotted: Option<&[f32]>,
    scratch: &mut Vec<f32>,
    out: &mut Vec<RowSummary>,
) {
    summarize_with::<true>(dtype, cols, raw, dotted, scratch, out);
}

/// The body of [`summarize`]; `FMA` says whether fused multiply-adds are
/// cheap on the target it is compiled for.
#[inline(always)]
fn summarize_with<const FMA: bool>(
    dtype: Dtype,
    cols: usize,
    raw: &[u8],
    dotted: Option<&[f32]>,
    scratch: &mut Vec<f32>,
    out: &mut Vec<RowSummary>,
) {
    match dotted {
        Some(d) => {
            assert_eq!(d.len(), cols, "one dotted value per column");
            rows_with::<FMA, 1>(dtype, cols, raw, [d], scratch, out);
        }
        None => rows_with::<FMA, 0>(dtype, cols, raw, [], scratch, out),
    }
}

/// The row loop of [`summarize_with`], with the dot product with the
/// one vector of `vs` when there is one.
#[inline(always)]
fn rows_with<const FMA: bool, const N: usize>(
    dtype: Dtype,
    cols: usize,
    raw: &[u8],
    vs: [&[f32]; N],
    scratch: &mut Vec<f32>,
    out: &mut Vec<RowSummary>,
) {
    let row_bytes = dtype
        .bytes_for(cols as u64)
        .expect("Matrix::new checked the row size") as usize;
    let n = raw.len() / row_bytes;
    let row = |i: usize| &raw[i * row_bytes..(i + 1) * row_bytes];
    let (first, mut closer_look) = (out.len(), Vec::new());
    // Each row's summary as its sums come (see `dots_each`), while the
    // row's bytes are still in cache.
    let mut summary = |(sum, dot): (f32, [f32; N])| {
        let i = out.len() - first;
        out.push(RowSummary {
            norm: sum.sqrt(),
            sq: sum,
            dot: dot.into_iter().next().unwrap_or(0.0),
            nan: false,
            inf: false,
            zero: false,
            hash: row_key(row(i), sum),
        });
        // A NaN or an infinity makes the sum NaN or infinite, and only a
        // zero row (or one of tiny values) sums to 0: the rare rows that
        // do either get a closer look.
        if !(sum > 0.0 && sum.is_finite()) {
            closer_look.push(i);
        }
    };
    scratch.resize(cols, 0.0);
    match dtype {
        Dtype::BF16 => dots_each::<FMA, N, _>(n, |i| Bf16(row(i)), vs, summary),
        Dtype::F32 => dots_each::<FMA, N, _>(n, |i| F32Bytes(row(i)), vs, summary),
        _ => {
            for i in 0..n {
                convert(dtype, row(i), scratch);
                summary(dots::<FMA, N>(scratch.as_slice(), vs));
            }
        }
    }
    for i in closer_look {
        convert(dtype, row(i), scratch);
        let s = &mut out[first + i];
        s.nan = scratch.iter().any(|x| x.is_nan());
        s.inf = scratch.iter().any(|x| x.is_infinite());
        s.zero = scratch.iter().all(|&x| x == 0.0);
        s.norm = if s.nan || s.inf {
            f32::NAN
        } else {
            // Squares that overflow or underflow f32.
            scratch
                .iter()
                .map(|&x| f64::from(x) * f64::from(x))
                .sum::<f64>()
                .sqrt() as f32
        };
    }
}

/// F32 values read in place from little-endian bytes.
#[derive(Clone, Copy)]
struct F32Bytes<'a>(&'a [u8]);

impl Row for F32Bytes<'_> {
    #[inline(always)]
    fn len(self) -> usize {
        self.0.len() / 4
    }
    #[inline(always)]
    fn chunk(self, k: usize) -> [f32; LANES] {
        let b: &[u8; 4 * LANES] = self.0[4 * k..4 * (k + LANES)]
            .try_into()
            .expect("whole step");
        std::array::from_fn(|l| {
            f32::from_le_bytes([b[4 * l], b[4 * l + 1], b[4 * l + 2], b[4 * l + 3]])
        })
    }
    #[inline(always)]
    fn at(self, j: usize) -> f32 {
        let b = &self.0[4 * j..4 * j + 4];
        f32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
    #[inline(always)]
    fn prefetch_ahead(self, k: usize) {
        // A step's 128 bytes: two lines.
        let p = self.0.as_ptr().wrapping_add(4 * k);
        crate::cpu::prefetch_ahead(p);
        crate::cpu::prefetch_ahead(p.wrapping_add(64));
    }
}

/// Words of 8 bytes that [`row_key`] samples from a long row.
const SAMPLED_WORDS: usize = 16;

/// The key by which duplicate rows are found: a function of the row's
/// bytes only, so equal rows always get equal keys. Rows of up to
/// `16 * SAMPLED_WORDS` bytes are hashed whole ([`hash_row`]); longer ones
/// by their length, `sum` (the sum of squares computed from the bytes)
/// and [`SAMPLED_WORDS`] words spread evenly over the row, the first and
/// the last included. Different rows that agree on all of these (rows of
/// equal norm that differ only between the sampled words) get equal keys:
/// duplicates are confirmed by comparing bytes, so such collisions cost
/// time, never a wrong finding. Reading a few words instead of hashing
/// every byte takes the hash off the path of the value pass.
#[inline(always)]
pub(crate) fn row_key(row: &[u8], sum: f32) -> u64 {
    if row.len() <= 16 * SAMPLED_WORDS {
        return hash_row(row);
    }
    let last = row.len() - 8;
    let mut words = [0u8; 8 * SAMPLED_WORDS];
    for (i, w) in words.chunks_exact_mut(8).enumerate() {
        let at = i * last / (SAMPLED_WORDS - 1);
        w.copy_from_slice(&row[at..at + 8]);
    }
    let mut acc = KEYS;
    let (stripes, _) = words.as_chunks::<64>();
    for s in stripes {
        mix(&mut acc, s);
    }
    finish(acc, &sum.to_bits().to_le_bytes(), row.len())
}

/// Starting keys of the eight hash lanes (hex digits of pi).
const KEYS: [u64; 8] = [
    0x243F_6A88_85A3_08D3,
    0x1319_8A2E_0370_7344,
    0xA409_3822_299F_31D0,
    0x082E_FA98_EC4E_6C89,
    0x4528_21E6_38D0_1377,
    0xBE54_66CF_34E9_0C6C,
    0xC0AC_29B7_C97C_50DD,
    0x3F84_D5B5_B547_0917,
];

/// A fast 64-bit hash of `bytes`, in the manner of XXH3's accumulate step:
/// eight lanes each add a word and the product of the word's halves mixed
/// with a key (a 32 × 32 → 64-bit multiply, which every SIMD unit has),
/// then rotate, so a word's place in the row matters. It is not resistant
/// to crafted collisions; duplicates are confirmed by comparing bytes, in
/// `O(n log n)` even when every row collides.
#[inline(always)]
pub(crate) fn hash_row(bytes: &[u8]) -> u64 {
    let mut acc = KEYS;
    let (stripes, rest) = bytes.as_chunks::<64>();
    for s in stripes {
        mix(&mut acc, s);
    }
    finish(acc, rest, bytes.len())
}

/// Mixes one 64-byte stripe into the eight lanes of [`hash_row`].
#[inline(always)]
fn mix(acc: &mut [u64; 8], stripe: &[u8; 64]) {
    // The rotation also keeps the compiler from vectorising across stripes
    // (gathers) instead of across the eight lanes of one stripe.
    for l in 0..8 {
        let w = u64::from_le_bytes(stripe[8 * l..8 * l + 8].try_into().expect("8 bytes"));
        let k = w ^ KEYS[l];
        acc[l] = acc[l]
            .wrapping_add(w)
            .wrapping_add((k & 0xFFFF_FFFF).wrapping_mul(k >> 32))
            .rotate_left(29);
    }
}

/// The end of [`hash_row`]: mixes the last `tail` bytes (fewer than 64)
/// zero-padded to a stripe, then merges the lanes and the length `len` as
/// XXH3 does: each pair of lanes, mixed with the keys, is multiplied to
/// 128 bits and folded, and the sum of the four is avalanched. The four
/// products are independent (a chain of eight multiplies made this the
/// slowest step of the row summary).
#[inline(always)]
fn finish(mut acc: [u64; 8], tail: &[u8], len: usize) -> u64 {
    let mut last = [0u8; 64];
    last[..tail.len()].copy_from_slice(tail);
    mix(&mut acc, &last);
    let fold = |a: u64, b: u64| {
        let p = u128::from(a) * u128::from(b);
        (p as u64) ^ ((p >> 64) as u64)
    };
    let mut h = (len as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for l in 0..4 {
        h = h.wrapping_add(fold(
            acc[2 * l] ^ KEYS[2 * l + 1],
            acc[2 * l + 1] ^ KEYS[2 * l],
        ));
    }
    h ^= h >> 37;
    h = h.wrapping_mul(0x1656_6791_9E37_79F9);
    h ^ (h >> 32)
}

#[cfg(test)]
mod tests;
