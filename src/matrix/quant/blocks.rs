//! Decoders of our own for the block types GGUF files store weights in
//! (`Q8_0`, `Q4_0`, `Q4_1`, `Q5_0`, `Q5_1`, `Q2_K` to `Q6_K`, and those
//! candle cannot read: the non-linear `IQ4_NL` and `IQ4_XS`, the codebook
//! type `IQ3_S`, the ternary `TQ2_0`, `MXFP4` and `NVFP4`; the embeddings and heads
//! of llama.cpp's mixes), reading the blocks straight from the mapped
//! bytes, aligned or not.
//!
//! The types candle cannot read are decoded as llama.cpp's
//! `dequantize_row_*` do (checked against the `gguf` Python package by
//! `benches/gguf_reference.py`, and `IQ3_S` against `ferrox-quant`'s
//! decoder in the tests); the others compute what candle's
//! `GgmlType::to_float` computes, operation by
//! operation (the same products, sums and differences of the same f32
//! values, never fused), so the values are the same to the bit (but for
//! which payload a NaN carries where two NaNs meet); but they are
//! written so that the compiler vectorises them, and built for AVX-512 and
//! AVX2 as well as portably (the build [`RowBuild::detect`] picks, so
//! `EMBSCOPE_CPU_MASK` reaches them; see [`build_for`]). candle's versions
//! are scalar (and the k-quant ones allocate per call): on a Zen 4 they
//! turned a 128256 × 4096 Q8_0 matrix into f32 at about a sixth of the
//! speed of reading it.

use std::sync::OnceLock;

use half::f16;

use crate::cpu::{Isa, RowBuild};
use crate::dtype::Dtype;

/// Values per k-quant super-block.
const QK_K: usize = 256;

/// Decodes whole blocks of `dtype` in `bytes` into `out` (which holds
/// exactly their values) when it is one of the types decoded here, with
/// the widest build this CPU runs (see [`build_for`]); returns false,
/// touching nothing, for the others.
///
/// Panics if the lengths disagree; [`super::super::Matrix::new`]
/// guarantees they do not.
pub(super) fn dequantize(dtype: Dtype, bytes: &[u8], out: &mut [f32]) -> bool {
    dequantize_with(build_for(dtype), dtype, bytes, out)
}

/// The build `dtype` is decoded with: the widest this CPU runs, but for
/// `IQ3_S` the next one (AVX2) where that is AVX-512. The AVX-512 build
/// turns its codebook lookups into gather instructions, which AMD's cores
/// run slowly: decoding Llama 3's 128256 × 4096 IQ3_S embedding took 86–91
/// ms with it on a Zen 4 against 47–50 ms with the AVX2 build, which loads
/// the 8 entries of a run one by one (as fast on Intel's cores, whose
/// gathers are no faster than 8 loads). The builds give the same bits.
fn build_for(dtype: Dtype) -> RowBuild {
    static NO_GATHER: OnceLock<RowBuild> = OnceLock::new();
    let widest = RowBuild::detect();
    if dtype != Dtype::IQ3_S || widest.isa() != Isa::Avx512 {
        return widest;
    }
    *NO_GATHER.get_or_init(|| RowBuild::all()[1])
}

/// The types decoded here.
const DECODED: [Dtype; 16] = [
    Dtype::Q8_0,
    Dtype::Q4_0,
    Dtype::Q4_1,
    Dtype::Q5_0,
    Dtype::Q5_1,
    Dtype::Q2_K,
    Dtype::Q3_K,
    Dtype::Q4_K,
    Dtype::Q5_K,
    Dtype::Q6_K,
    Dtype::IQ4_NL,
    Dtype::IQ4_XS,
    Dtype::TQ2_0,
    Dtype::MXFP4,
    Dtype::NVFP4,
    Dtype::IQ3_S,
];

/// [`dequantize`] with the build `build`.
pub(super) fn dequantize_with(
    build: RowBuild,
    dtype: Dtype,
    bytes: &[u8],
    out: &mut [f32],
) -> bool {
    if !DECODED.contains(&dtype) {
        return false;
    }
    let (block_values, block_bytes) = dtype.block();
    let n = bytes.len() / block_bytes as usize;
    assert!(
        bytes.len() == n * block_bytes as usize && out.len() == n * block_values as usize,
        "{} bytes of {block_bytes}-byte blocks into {} values",
        bytes.len(),
        out.len()
    );
    match build.isa() {
        // SAFETY: a `RowBuild` runs only on a CPU with its instructions.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { decode_avx512(dtype, bytes, out) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { decode_avx2(dtype, bytes, out) },
        _ => decode(dtype, bytes, out),
    }
    true
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx2,fma,f16c")]
fn decode_avx512(dtype: Dtype, bytes: &[u8], out: &mut [f32]) {
    decode(dtype, bytes, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
fn decode_avx2(dtype: Dtype, bytes: &[u8], out: &mut [f32]) {
    decode(dtype, bytes, out);
}

/// Every block of `bytes` into `out`, built into the caller's
/// instructions; `dtype` is one of [`DECODED`].
#[inline(always)]
fn decode(dtype: Dtype, bytes: &[u8], out: &mut [f32]) {
    match dtype {
        Dtype::Q8_0 => each_block!(bytes, out, q8_0),
        Dtype::Q4_0 => each_block!(bytes, out, q4_0),
        Dtype::Q4_1 => each_block!(bytes, out, q4_1),
        Dtype::Q5_0 => each_block!(bytes, out, q5_0),
        Dtype::Q5_1 => each_block!(bytes, out, q5_1),
        Dtype::Q2_K => each_block!(bytes, out, q2_k),
        Dtype::Q3_K => each_block!(bytes, out, q3_k),
        Dtype::Q4_K => each_block!(bytes, out, q4_k),
        Dtype::Q5_K => each_block!(bytes, out, q5_k),
        Dtype::Q6_K => each_block!(bytes, out, q6_k),
        Dtype::IQ4_NL => each_block!(bytes, out, iq4_nl),
        Dtype::IQ4_XS => each_block!(bytes, out, iq4_xs),
        Dtype::TQ2_0 => each_block!(bytes, out, tq2_0),
        Dtype::MXFP4 => each_block!(bytes, out, mxfp4),
        Dtype::NVFP4 => each_block!(bytes, out, nvfp4),
        Dtype::IQ3_S => each_block!(bytes, out, iq3_s),
        other => unreachable!("{other} is not decoded here"),
    }
}

/// Calls `$one(block, values)` on each block of `$bytes` and its values in
/// `$out`, the sizes taken from `$one`'s arrays (a size that disagreed with
/// `Dtype::block` would fail the comparison with candle in the tests). A direct call, so that
/// `$one` is built into the caller's instructions: passed as a function
/// or closure, it was called through a shim built without them, and ran
/// scalar.
macro_rules! each_block {
    ($bytes:expr, $out:expr, $one:ident) => {{
        let (blocks, _) = $bytes.as_chunks();
        let (outs, _) = $out.as_chunks_mut();
        for (b, o) in blocks.iter().zip(outs) {
            $one(b, o);
        }
    }};
}
use each_block;

/// The f16 at `b[i..i + 2]` (little-endian), as f32.
#[inline(always)]
fn half_at(b: &[u8], i: usize) -> f32 {
    f16::from_le_bytes([b[i], b[i + 1]]).to_f32()
}

/// `Q8_0`: an f16 scale, then 32 signed bytes; value = byte × scale.
#[inline(always)]
fn q8_0(b: &[u8; 34], o: &mut [f32; 32]) {
    let d = half_at(b, 0);
    for (o, &q) in o.iter_mut().zip(&b[2..]) {
        *o = f32::from(q as i8) * d;
    }
}

/// `Q4_0`: an f16 scale, then 16 bytes of two 4-bit values (low nibbles
/// the first 16 values, high the last); value = (nibble − 8) × scale.
#[inline(always)]
fn q4_0(b: &[u8; 18], o: &mut [f32; 32]) {
    let d = half_at(b, 0);
    let (lo, hi) = o.split_at_mut(16);
    for ((lo, hi), &q) in lo.iter_mut().zip(hi).zip(&b[2..]) {
        *lo = f32::from(i16::from(q & 0xF) - 8) * d;
        *hi = f32::from(i16::from(q >> 4) - 8) * d;
    }
}

/// `Q4_1`: f16 scale `d` and min `m`, then 16 bytes of two 4-bit values
/// (as `Q4_0`); value = nibble × d + m.
#[inline(always)]
fn q4_1(b: &[u8; 20], o: &mut [f32; 32]) {
    let (d, m) = (half_at(b, 0), half_at(b, 2));
    let (lo, hi) = o.split_at_mut(16);
    for ((lo, hi), &q) in lo.iter_mut().zip(hi).zip(&b[4..]) {
        *lo = f32::from(q & 0xF) * d + m;
        *hi = f32::from(q >> 4) * d + m;
    }
}

/// The fifth bits of a `Q5_0`/`Q5_1` block's values `j` and `j + 16`,
/// from its 32 bits of high bits `qh`, as bit 4.
#[inline(always)]
fn fifth_bits(qh: u32, j: usize) -> (u8, u8) {
    (
        (((qh >> j) << 4) & 0x10) as u8,
        ((qh >> (j + 12)) & 0x10) as u8,
    )
}

/// `Q5_0`: an f16 scale, 4 bytes of high bits, 16 bytes of low nibbles
/// (as `Q4_0`); value = (5-bit value − 16) × scale.
#[inline(always)]
fn q5_0(b: &[u8; 22], o: &mut [f32; 32]) {
    let d = half_at(b, 0);
    let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
    let (lo, hi) = o.split_at_mut(16);
    for (j, ((lo, hi), &q)) in lo.iter_mut().zip(hi).zip(&b[6..]).enumerate() {
        let (h0, h1) = fifth_bits(qh, j);
        *lo = f32::from(i16::from((q & 0xF) | h0) - 16) * d;
        *hi = f32::from(i16::from((q >> 4) | h1) - 16) * d;
    }
}

/// `Q5_1`: f16 scale `d` and min `m`, then as `Q5_0`; value = 5-bit value
/// × d + m.
#[inline(always)]
fn q5_1(b: &[u8; 24], o: &mut [f32; 32]) {
    let (d, m) = (half_at(b, 0), half_at(b, 2));
    let qh = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
    let (lo, hi) = o.split_at_mut(16);
    for (j, ((lo, hi), &q)) in lo.iter_mut().zip(hi).zip(&b[8..]).enumerate() {
        let (h0, h1) = fifth_bits(qh, j);
        *lo = f32::from((q & 0xF) | h0) * d + m;
        *hi = f32::from((q >> 4) | h1) * d + m;
    }
}

/// `Q2_K`: 16 bytes of 4-bit scale and min pairs (one per 16 values), 64
/// bytes of 2-bit values, f16 `d` and `dmin`; in two halves of 128 values,
/// each four runs of 32 (bits 0–1, 2–3, 4–5, 6–7 of the half's 32 bytes);
/// value = (d × scale) × q − dmin × min.
#[inline(always)]
fn q2_k(b: &[u8; 84], o: &mut [f32; QK_K]) {
    let (d, dmin) = (half_at(b, 80), half_at(b, 82));
    let (scales, _) = b[..16].as_chunks::<8>();
    let (qs, _) = b[16..80].as_chunks::<32>();
    let (outs, _) = o.as_chunks_mut::<128>();
    for ((sc, q), o) in scales.iter().zip(qs).zip(outs) {
        let (runs, _) = o.as_chunks_mut::<16>();
        for (r, o) in runs.iter_mut().enumerate() {
            // Runs of 16 values: bits `2 (r / 2)` of the half's bytes
            // 0..16 (even r) or 16..32 (odd r).
            let (shift, q) = (2 * (r / 2), &q[16 * (r % 2)..][..16]);
            let dl = d * f32::from(sc[r] & 0xF);
            let ml = dmin * f32::from(sc[r] >> 4);
            for (o, &q) in o.iter_mut().zip(q) {
                *o = dl * f32::from((q >> shift) & 3) - ml;
            }
        }
    }
}

/// `Q3_K`: 32 bytes of high bits, 64 bytes of 2-bit low bits, 12 bytes of
/// 6-bit scales (one per 16 values), an f16 `d`; laid out as `Q2_K`, run
/// `r` of 32 values (0..8) taking bit `r` of the high bits; value =
/// (d × (scale − 32)) × (low bits − 4 when the high bit is clear).
#[inline(always)]
fn q3_k(b: &[u8; 110], o: &mut [f32; QK_K]) {
    let d = half_at(b, 108);
    let hmask = &b[..32];
    let (qs, _) = b[32..96].as_chunks::<32>();
    let scales = q3_k_scales(&b[96..108]);
    let (outs, _) = o.as_chunks_mut::<128>();
    for (half, (q, o)) in qs.iter().zip(outs).enumerate() {
        let (runs, _) = o.as_chunks_mut::<16>();
        for (r, o) in runs.iter_mut().enumerate() {
            let (shift, at) = (2 * (r / 2), 16 * (r % 2));
            let bit = 1u8 << (4 * half + r / 2);
            let dl = d * (f32::from(scales[8 * half + r]) - 32.0);
            let (q, h) = (&q[at..][..16], &hmask[at..][..16]);
            for ((o, &q), &h) in o.iter_mut().zip(q).zip(h) {
                let low = ((q >> shift) & 3) as i8;
                let v = low - if h & bit == 0 { 4 } else { 0 };
                *o = dl * f32::from(v);
            }
        }
    }
}

/// The 16 6-bit scales of a `Q3_K` block from their 12 packed bytes
/// (llama.cpp's `kmask` unpacking), as signed bytes.
#[inline(always)]
fn q3_k_scales(packed: &[u8]) -> [i8; 16] {
    const KMASK1: u32 = 0x0303_0303;
    const KMASK2: u32 = 0x0f0f_0f0f;
    let word = |i: usize| u32::from_le_bytes(packed[4 * i..4 * i + 4].try_into().expect("4"));
    let (a0, a1, tmp) = (word(0), word(1), word(2));
    let aux = [
        (a0 & KMASK2) | ((tmp & KMASK1) << 4),
        (a1 & KMASK2) | (((tmp >> 2) & KMASK1) << 4),
        ((a0 >> 4) & KMASK2) | (((tmp >> 4) & KMASK1) << 4),
        ((a1 >> 4) & KMASK2) | (((tmp >> 6) & KMASK1) << 4),
    ];
    let mut out = [0i8; 16];
    for (o, a) in out.chunks_exact_mut(4).zip(aux) {
        for (o, b) in o.iter_mut().zip(a.to_le_bytes()) {
            *o = b as i8;
        }
    }
    out
}

/// The 16 levels of the non-linear 4-bit types (ggml's `kvalues_iq4nl`).
const IQ4_LEVELS: [i8; 16] = [
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
];

/// 32 values of the `IQ4` types from 16 bytes of level indices (low
/// nibbles the first 16 values, high the last): level × `d`.
#[inline(always)]
fn iq4_run(d: f32, qs: &[u8], o: &mut [f32]) {
    let (lo, hi) = o.split_at_mut(16);
    for ((lo, hi), &q) in lo.iter_mut().zip(hi).zip(qs) {
        *lo = d * f32::from(IQ4_LEVELS[usize::from(q & 0xF)]);
        *hi = d * f32::from(IQ4_LEVELS[usize::from(q >> 4)]);
    }
}

/// `IQ4_NL`: an f16 scale, then 16 bytes of two level indices.
#[inline(always)]
fn iq4_nl(b: &[u8; 18], o: &mut [f32; 32]) {
    iq4_run(half_at(b, 0), &b[2..], o);
}

/// `IQ4_XS`: an f16 scale `d`, 16 bits of high scale bits, 4 bytes of low
/// scale bits, 128 bytes of level indices; runs of 32 values, run `r`
/// scaled by `d × (scale_r − 32)`, its 6-bit scale the low (`r` even) or
/// high nibble of byte `r / 2` with bits `2r, 2r + 1` of the high bits on
/// top.
#[inline(always)]
fn iq4_xs(b: &[u8; 136], o: &mut [f32; QK_K]) {
    let d = half_at(b, 0);
    let high = u16::from_le_bytes([b[2], b[3]]);
    let low = &b[4..8];
    let (qs, _) = b[8..].as_chunks::<16>();
    let (outs, _) = o.as_chunks_mut::<32>();
    for (r, (q, o)) in qs.iter().zip(outs).enumerate() {
        let scale = ((low[r / 2] >> (4 * (r % 2))) & 0xF) | ((((high >> (2 * r)) & 3) as u8) << 4);
        iq4_run(d * f32::from(i16::from(scale) - 32), q, o);
    }
}

/// `TQ2_0` (ternary): 64 bytes of four 2-bit values, then an f16 scale;
/// in each run of 32 bytes, bits `2l, 2l + 1` of byte `m` are value
/// `32 l + m` of the run's 128; value = (2-bit value − 1) × scale.
#[inline(always)]
fn tq2_0(b: &[u8; 66], o: &mut [f32; QK_K]) {
    let d = half_at(b, 64);
    let (runs, _) = b[..64].as_chunks::<32>();
    let (outs, _) = o.as_chunks_mut::<128>();
    for (q, o) in runs.iter().zip(outs) {
        let (parts, _) = o.as_chunks_mut::<32>();
        for (l, part) in parts.iter_mut().enumerate() {
            for (v, &q) in part.iter_mut().zip(q) {
                *v = f32::from(i16::from((q >> (2 * l)) & 3) - 1) * d;
            }
        }
    }
}

/// `IQ3_S`: an f16 scale `d`, 64 bytes of the low 8 bits of 9-bit grid
/// indices, 8 bytes of their 9th bits (byte `r` for run `r` of 32
/// values, bit `k` for its index `k`), 32 sign bytes (bit `j` of byte `k`
/// negates value `j` of the 8 that indices `2k`, `2k + 1` give), 4 bytes
/// of 4-bit run scales (run `r`'s the low or high nibble of byte `r / 2`).
/// Each index picks 4 magnitudes from the codebook `IQ3S_GRID`; value =
/// d × (1 + 2 × run scale) × magnitude × ±1, as ggml's
/// `dequantize_row_iq3_s` computes it. (The codebook is the format's, from
/// the `ferrox-quant` crate; its own decoder, which the tests compare this
/// one with, runs at a twentieth of the speed: `IQ3_S` is the embedding
/// of llama.cpp's `IQ2_S`, `IQ2_M` and `IQ3` mixes.)
#[inline(always)]
fn iq3_s(b: &[u8; 110], o: &mut [f32; QK_K]) {
    use ferrox_quant::iq_tables::IQ3S_GRID;
    let d = half_at(b, 0);
    let (qs, _) = b[2..66].as_chunks::<8>();
    let (qh, signs, scales) = (&b[66..74], &b[74..106], &b[106..110]);
    let (signs, _) = signs.as_chunks::<4>();
    let (runs, _) = o.as_chunks_mut::<32>();
    for (r, ((run, qs), signs)) in runs.iter_mut().zip(qs).zip(signs).enumerate() {
        let scale = (scales[r / 2] >> (4 * (r % 2))) & 0xF;
        let db = d * f32::from(1 + 2 * scale);
        let high = usize::from(qh[r]);
        // The run's 32 magnitudes, 4 from each of its 8 indices' entries;
        // then the values in one loop the compiler vectorises.
        let mut magnitudes = [0u8; 32];
        let (quads, _) = magnitudes.as_chunks_mut::<4>();
        for (i, quad) in quads.iter_mut().enumerate() {
            let index = usize::from(qs[i]) | ((high << (8 - i)) & 256);
            *quad = IQ3S_GRID[index].to_le_bytes();
        }
        let signs = u32::from_le_bytes(*signs);
        for (j, (o, &m)) in run.iter_mut().zip(&magnitudes).enumerate() {
            // × −1 as a flip of the sign bit: the same value (a NaN's
            // sign bit may differ), without a branch.
            let negate = ((signs >> j) & 1) << 31;
            *o = f32::from_bits((db * f32::from(m)).to_bits() ^ negate);
        }
    }
}

/// The FP4 (E2M1) values of `MXFP4`, doubled (ggml's `kvalues_mxfp4`).
const MXFP4_LEVELS: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/// `MXFP4`: an E8M0 exponent byte `e`, then 16 bytes of two 4-bit values
/// (low nibbles the first 16); value = doubled level × 2^(e − 128), as
/// ggml's `GGML_E8M0_TO_FP32_HALF` makes the scale (`e` 255 too: ggml
/// reads it as 2^127, not as the OCP format's NaN).
#[inline(always)]
fn mxfp4(b: &[u8; 17], o: &mut [f32; 32]) {
    let e = u32::from(b[0]);
    let d = f32::from_bits(if e < 2 {
        0x0020_0000 << e
    } else {
        (e - 1) << 23
    });
    let (lo, hi) = o.split_at_mut(16);
    for ((lo, hi), &q) in lo.iter_mut().zip(hi).zip(&b[1..]) {
        *lo = f32::from(MXFP4_LEVELS[usize::from(q & 0xF)]) * d;
        *hi = f32::from(MXFP4_LEVELS[usize::from(q >> 4)]) * d;
    }
}

/// `NVFP4`: four unsigned E4M3 scale bytes, one for each run of 16
/// values, then 8 bytes of two 4-bit values per run (low nibbles its first
/// 8); value = doubled E2M1 level (`MXFP4`'s) × the scale halved
/// ([`ue4m3_half`]).
#[inline(always)]
fn nvfp4(b: &[u8; 36], o: &mut [f32; 64]) {
    let (scales, levels) = b.split_at(4);
    for ((run, &s), q) in o
        .chunks_exact_mut(16)
        .zip(scales)
        .zip(levels.chunks_exact(8))
    {
        let d = ue4m3_half(s);
        let (lo, hi) = run.split_at_mut(8);
        for ((lo, hi), &q) in lo.iter_mut().zip(hi).zip(q) {
            *lo = f32::from(MXFP4_LEVELS[usize::from(q & 0xF)]) * d;
            *hi = f32::from(MXFP4_LEVELS[usize::from(q >> 4)]) * d;
        }
    }
}

/// Half an unsigned E4M3 scale (exponent bias 7), as ggml's
/// `ggml_ue4m3_to_fp32` reads it: 0x00 and 0x7F (the format's NaN) are 0,
/// the top bit is not read, exponent 0 is subnormal (mantissa × 2^−9).
#[inline(always)]
fn ue4m3_half(x: u8) -> f32 {
    if x == 0 || x == 0x7F {
        return 0.0;
    }
    let (exp, man) = (u32::from((x >> 3) & 0xF), f32::from(x & 7));
    let scale = if exp == 0 {
        man / 512.0
    } else {
        (1.0 + man / 8.0) * f32::from_bits((exp + 120) << 23)
    };
    scale * 0.5
}

/// Scale and min of sub-block `j` (0..8) from a k-quant's 12 packed bytes
/// of 6-bit scales and mins (llama.cpp's `get_scale_min_k4`).
#[inline(always)]
fn scale_min(j: usize, s: &[u8]) -> (u8, u8) {
    if j < 4 {
        (s[j] & 63, s[j + 4] & 63)
    } else {
        (
            (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4),
            (s[j + 4] >> 4) | ((s[j] >> 6) << 4),
        )
    }
}

/// The factors of sub-blocks `2j` and `2j + 1` of a `Q4_K` or `Q5_K`
/// block: `(d × scale, dmin × min)` each.
#[inline(always)]
fn sub_scales(d: f32, dmin: f32, scales: &[u8], j: usize) -> [(f32, f32); 2] {
    [2 * j, 2 * j + 1].map(|k| {
        let (sc, m) = scale_min(k, scales);
        (d * f32::from(sc), dmin * f32::from(m))
    })
}

/// `Q4_K`: f16 scale `d` and min `dmin`, 12 bytes of 6-bit sub-block
/// scales and mins, 128 bytes of 4-bit values; sub-blocks of 32 values,
/// value = (d × scale) × q − dmin × min.
#[inline(always)]
fn q4_k(b: &[u8; 144], o: &mut [f32; QK_K]) {
    let (d, dmin) = (half_at(b, 0), half_at(b, 2));
    let scales = &b[4..16];
    let (qs, _) = b[16..].as_chunks::<32>();
    let (outs, _) = o.as_chunks_mut::<64>();
    for (j, (q, o)) in qs.iter().zip(outs).enumerate() {
        let [(d1, m1), (d2, m2)] = sub_scales(d, dmin, scales, j);
        let (lo, hi) = o.split_at_mut(32);
        for ((lo, hi), &q) in lo.iter_mut().zip(hi).zip(q) {
            *lo = d1 * f32::from(q & 0xF) - m1;
            *hi = d2 * f32::from(q >> 4) - m2;
        }
    }
}

/// `Q5_K`: as `Q4_K` with a fifth bit per value from 32 bytes of high
/// bits (bit `2j` of byte `l` for value `l` of sub-block `2j`, bit
/// `2j + 1` for sub-block `2j + 1`).
#[inline(always)]
fn q5_k(b: &[u8; 176], o: &mut [f32; QK_K]) {
    let (d, dmin) = (half_at(b, 0), half_at(b, 2));
    let scales = &b[4..16];
    let qh = &b[16..48];
    let (qs, _) = b[48..].as_chunks::<32>();
    let (outs, _) = o.as_chunks_mut::<64>();
    for (j, (q, o)) in qs.iter().zip(outs).enumerate() {
        let [(d1, m1), (d2, m2)] = sub_scales(d, dmin, scales, j);
        let (lo, hi) = o.split_at_mut(32);
        for (((lo, hi), &q), &h) in lo.iter_mut().zip(hi).zip(q).zip(qh) {
            // candle adds 16.0 to the nibble's f32: the same exact value.
            let h1 = ((h >> (2 * j)) & 1) << 4;
            let h2 = ((h >> (2 * j + 1)) & 1) << 4;
            *lo = d1 * f32::from((q & 0xF) | h1) - m1;
            *hi = d2 * f32::from((q >> 4) | h2) - m2;
        }
    }
}

/// `Q6_K`: 128 bytes of low 4 bits, 64 of high 2 bits, 16 signed 8-bit
/// scales (one per 16 values), an f16 scale `d`; value = (d × scale) ×
/// (q − 32), in two halves of 128 values laid out as llama.cpp does.
#[inline(always)]
fn q6_k(b: &[u8; 210], o: &mut [f32; QK_K]) {
    let d = half_at(b, 208);
    let (qls, _) = b[..128].as_chunks::<64>();
    let (qhs, _) = b[128..192].as_chunks::<32>();
    let (scs, _) = b[192..208].as_chunks::<8>();
    let (outs, _) = o.as_chunks_mut::<128>();
    for (((ql, qh), sc), o) in qls.iter().zip(qhs).zip(scs).zip(outs) {
        let (o, _) = o.as_chunks_mut::<32>();
        let [o1, o2, o3, o4] = o else {
            unreachable!("128 values are four runs of 32")
        };
        // Values l and l + 16 of each run of 32 take scales is and is + 1.
        for half in 0..2 {
            let s = |k: usize| d * f32::from(sc[half + 2 * k] as i8);
            let (s1, s2, s3, s4) = (s(0), s(1), s(2), s(3));
            let run = 16 * half..16 * half + 16;
            for l in run {
                let (a, c, h) = (ql[l], ql[l + 32], qh[l]);
                let q1 = i16::from((a & 0xF) | ((h & 3) << 4)) - 32;
                let q2 = i16::from((c & 0xF) | (((h >> 2) & 3) << 4)) - 32;
                let q3 = i16::from((a >> 4) | (((h >> 4) & 3) << 4)) - 32;
                let q4 = i16::from((c >> 4) | (((h >> 6) & 3) << 4)) - 32;
                o1[l] = s1 * f32::from(q1);
                o2[l] = s2 * f32::from(q2);
                o3[l] = s3 * f32::from(q3);
                o4[l] = s4 * f32::from(q4);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::noise;
    use super::*;

    /// `dtype`'s blocks in `bytes` decoded by another decoder into `out`:
    /// candle's, or ferrox-quant's for `IQ3_S`; false for the types only
    /// llama.cpp decodes (`benches/gguf_reference.py` checks those
    /// against its Python package).
    fn reference(dtype: Dtype, bytes: &[u8], out: &mut [f32]) -> bool {
        match dtype {
            Dtype::IQ4_NL | Dtype::IQ4_XS | Dtype::TQ2_0 | Dtype::MXFP4 | Dtype::NVFP4 => {
                return false;
            }
            Dtype::IQ3_S => out.copy_from_slice(&ferrox_quant::dequant_iq3_s(bytes).unwrap()),
            _ => super::super::candle(dtype, bytes, out),
        }
        true
    }

    #[test]
    fn every_build_decodes_any_bytes_as_candle_or_ferrox_does_bit_for_bit() {
        // (A NaN's payload aside: the sum of two NaNs, a NaN scale's
        // product and a NaN min, is either one, as the compiler orders
        // the operands; and `IQ3_S` negates by flipping the sign bit.)
        // The types with no other decoder: every build gives the portable
        // build's bits, NaNs' too.
        let portable = RowBuild::all().pop().expect("the portable build");
        for (t, &dtype) in DECODED.iter().enumerate() {
            let (block_values, block_bytes) = dtype.block();
            let (block_values, block_bytes) = (block_values as usize, block_bytes as usize);
            // Random bytes: scales of every kind (NaN, infinite, subnormal,
            // zero) among them; one byte more, to read them unaligned too.
            let blocks = 600;
            let raw = noise(blocks * block_bytes + 1, 7 + t as u64);
            let expected = |bytes: &[u8]| {
                let mut want = vec![0f32; blocks * block_values];
                let external = reference(dtype, bytes, &mut want);
                if !external {
                    assert!(dequantize_with(portable, dtype, bytes, &mut want));
                }
                (want, external)
            };
            let (want, external) = expected(&raw[..blocks * block_bytes]);
            for build in RowBuild::all() {
                for bytes in [&raw[..blocks * block_bytes], &raw[1..]] {
                    let mut got = vec![f32::NAN; want.len()];
                    assert!(dequantize_with(build, dtype, bytes, &mut got));
                    let expect = match bytes.as_ptr() == raw.as_ptr() {
                        true => want.clone(),
                        false => expected(bytes).0,
                    };
                    let differ = got.iter().zip(&expect).position(|(g, e)| {
                        g.to_bits() != e.to_bits() && !(external && g.is_nan() && e.is_nan())
                    });
                    assert_eq!(differ, None, "{dtype} {build:?}");
                }
            }
            if external {
                assert!(want.iter().any(|v| v.is_nan()), "{dtype}: NaN scales met");
            }
            assert!(want.iter().any(|v| v.is_finite() && *v != 0.0), "{dtype}");
        }
    }

    #[test]
    fn ternary_and_fp4_blocks_decode_to_their_levels_times_their_scales() {
        // TQ2_0: byte m of run h holds values 32 l + m of the run's 128 in
        // bits 2l, 2l + 1; here all four are (m + h) % 3, so value
        // 128 h + 32 l + m is ((m + h) % 3 − 1) × d, d = −0.5.
        let mut tq = Vec::new();
        for h in 0..2 {
            tq.extend((0..32).map(|m| ((m + h) % 3) as u8 * 0b0101_0101));
        }
        tq.extend([0x00, 0xB8]);
        let mut got = vec![0f32; 256];
        assert!(dequantize(Dtype::TQ2_0, &tq, &mut got));
        for (i, &v) in got.iter().enumerate() {
            let (h, m) = (i / 128, i % 32);
            assert_eq!(v, ((m + h) % 3) as f32 * -0.5 + 0.5, "value {i}");
        }
        // MXFP4: E8M0 exponent 127 (a scale of 1, the levels doubled); byte
        // j holds levels j and 15 − j. Exponents 0, 1 and 255 as ggml
        // reads them: 2^−128, 2^−127 (both subnormal) and 2^127.
        // (The scales as f64 powers: an f32 `powi(-128)` is 0 in a debug
        // build, which takes 1 / 2^128.)
        for (e, power) in [(127u8, -1), (0, -128), (1, -127), (255, 127)] {
            let scale = 2f64.powi(power) as f32;
            let mut fp4 = vec![e];
            fp4.extend((0..16u8).map(|j| j | ((15 - j) << 4)));
            let mut got = [0f32; 32];
            assert!(dequantize(Dtype::MXFP4, &fp4, &mut got));
            for j in 0..16 {
                assert_eq!(got[j], scale * f32::from(MXFP4_LEVELS[j]), "e {e}, {j}");
                assert_eq!(
                    got[16 + j],
                    scale * f32::from(MXFP4_LEVELS[15 - j]),
                    "e {e}, {j}"
                );
            }
        }
    }

    #[test]
    fn nvfp4_blocks_decode_to_their_levels_times_their_halved_e4m3_scales() {
        // The four runs' scales: 0x38 (1), 0x01 (the least subnormal,
        // 2^-9), 0xFF (the top bit not read: 0x7F's bits, 480, which ggml
        // does not take as NaN) and 0x7F (E4M3's NaN: 0), each halved;
        // byte j of a run holds levels j and 15 - j.
        let mut b = vec![0x38, 0x01, 0xFF, 0x7F];
        for _ in 0..4 {
            b.extend((0..8u8).map(|j| j | ((15 - j) << 4)));
        }
        let mut got = [0f32; 64];
        assert!(dequantize(Dtype::NVFP4, &b, &mut got));
        for (run, scale) in [0.5f32, 1.0 / 1024.0, 240.0, 0.0].into_iter().enumerate() {
            for j in 0..8 {
                let at = 16 * run + j;
                assert_eq!(got[at], scale * f32::from(MXFP4_LEVELS[j]), "{at}");
                assert_eq!(got[at + 8], scale * f32::from(MXFP4_LEVELS[15 - j]), "{at}");
            }
        }
    }

    #[test]
    fn iq4_blocks_decode_to_their_levels_times_their_scales() {
        // IQ4_NL: d = 0.5 (f16 0x3800); byte j holds levels j and 15 − j.
        let mut nl = vec![0x00, 0x38];
        nl.extend((0..16u8).map(|j| j | ((15 - j) << 4)));
        let mut got = [0f32; 32];
        assert!(dequantize(Dtype::IQ4_NL, &nl, &mut got));
        for j in 0..16 {
            assert_eq!(got[j], 0.5 * f32::from(IQ4_LEVELS[j]), "{j}");
            assert_eq!(got[16 + j], 0.5 * f32::from(IQ4_LEVELS[15 - j]), "{j}");
        }
        // IQ4_XS: d = 2; run r's 6-bit scale is 33 + r (so × (r + 1)):
        // low nibbles 1 + r, high bits 2 (32 = 2 << 4).
        let mut xs = vec![0x00, 0x40];
        xs.extend(0xAAAAu16.to_le_bytes());
        xs.extend((0..4u8).map(|k| (2 * k + 1) | ((2 * k + 2) << 4)));
        xs.extend((0..8).flat_map(|_| (0..16u8).map(|j| j | (j << 4))));
        let mut got = vec![0f32; 256];
        assert!(dequantize(Dtype::IQ4_XS, &xs, &mut got));
        for r in 0..8 {
            for j in 0..32 {
                let want = 2.0 * (r as f32 + 1.0) * f32::from(IQ4_LEVELS[j % 16]);
                assert_eq!(got[32 * r + j], want, "run {r} value {j}");
            }
        }
    }

    #[test]
    fn other_types_are_left_to_candle() {
        let mut out = [1f32; 32];
        assert!(!dequantize(Dtype::Q8_1, &[0; 36], &mut out));
        assert_eq!(out, [1.0; 32], "untouched");
    }
}
