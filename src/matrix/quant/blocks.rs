//! Decoders of their own for the block types vocabulary matrices are
//! most often stored in (`Q8_0`, `Q4_0`, `Q4_K`, `Q5_K`, `Q6_K`: the
//! embedding and head of llama.cpp's usual mixes), reading the blocks
//! straight from the mapped bytes, aligned or not.
//!
//! They compute what candle's `GgmlType::to_float` computes, operation by
//! operation (the same products and differences of the same f32 values,
//! never fused), so the values are the same to the bit; but they are
//! written so that the compiler vectorises them, and built for AVX-512 and
//! AVX2 as well as portably (the build [`RowBuild::detect`] picks, so
//! `EMBSCOPE_CPU_MASK` reaches them). candle's versions are scalar (and
//! the k-quant ones allocate per call): on a Zen 4 they turned a 128256 ×
//! 4096 Q8_0 matrix into f32 at about a sixth of the speed of reading it.

use half::f16;

use crate::cpu::{Isa, RowBuild};
use crate::dtype::Dtype;

/// Values per k-quant super-block.
const QK_K: usize = 256;

/// Decodes whole blocks of `dtype` in `bytes` into `out` (which holds
/// exactly their values) when it is one of the types decoded here, with
/// the widest build this CPU runs; returns false, touching nothing, for
/// the others.
///
/// Panics if the lengths disagree; [`super::super::Matrix::new`]
/// guarantees they do not.
pub(super) fn dequantize(dtype: Dtype, bytes: &[u8], out: &mut [f32]) -> bool {
    dequantize_with(RowBuild::detect(), dtype, bytes, out)
}

/// [`dequantize`] with the build `build`.
pub(super) fn dequantize_with(
    build: RowBuild,
    dtype: Dtype,
    bytes: &[u8],
    out: &mut [f32],
) -> bool {
    let Some(kind) = Kind::of(dtype) else {
        return false;
    };
    let (block_bytes, block_values) = kind.sizes();
    let n = bytes.len() / block_bytes;
    assert!(
        bytes.len() == n * block_bytes && out.len() == n * block_values,
        "{} bytes of {block_bytes}-byte blocks into {} values",
        bytes.len(),
        out.len()
    );
    match build.isa() {
        // SAFETY: a `RowBuild` runs only on a CPU with its instructions.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { decode_avx512(kind, bytes, out) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { decode_avx2(kind, bytes, out) },
        _ => decode(kind, bytes, out),
    }
    true
}

/// The block types decoded here.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Q8_0,
    Q4_0,
    Q4K,
    Q5K,
    Q6K,
}

impl Kind {
    fn of(dtype: Dtype) -> Option<Kind> {
        Some(match dtype {
            Dtype::Q8_0 => Kind::Q8_0,
            Dtype::Q4_0 => Kind::Q4_0,
            Dtype::Q4_K => Kind::Q4K,
            Dtype::Q5_K => Kind::Q5K,
            Dtype::Q6_K => Kind::Q6K,
            _ => return None,
        })
    }

    /// Bytes and values per block.
    fn sizes(self) -> (usize, usize) {
        match self {
            Kind::Q8_0 => (34, 32),
            Kind::Q4_0 => (18, 32),
            Kind::Q4K => (144, QK_K),
            Kind::Q5K => (176, QK_K),
            Kind::Q6K => (210, QK_K),
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx2,fma,f16c")]
fn decode_avx512(kind: Kind, bytes: &[u8], out: &mut [f32]) {
    decode(kind, bytes, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
fn decode_avx2(kind: Kind, bytes: &[u8], out: &mut [f32]) {
    decode(kind, bytes, out);
}

/// Every block of `bytes` into `out`, built into the caller's
/// instructions.
#[inline(always)]
fn decode(kind: Kind, bytes: &[u8], out: &mut [f32]) {
    match kind {
        Kind::Q8_0 => each_block!(bytes, out, q8_0),
        Kind::Q4_0 => each_block!(bytes, out, q4_0),
        Kind::Q4K => each_block!(bytes, out, q4_k),
        Kind::Q5K => each_block!(bytes, out, q5_k),
        Kind::Q6K => each_block!(bytes, out, q6_k),
    }
}

/// Calls `$one(block, values)` on each block of `$bytes` and its values in
/// `$out`, the sizes taken from `$one`'s arrays. A direct call, so that
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
        let (s1, m1) = scale_min(2 * j, scales);
        let (s2, m2) = scale_min(2 * j + 1, scales);
        let (d1, m1) = (d * f32::from(s1), dmin * f32::from(m1));
        let (d2, m2) = (d * f32::from(s2), dmin * f32::from(m2));
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
        let (s1, m1) = scale_min(2 * j, scales);
        let (s2, m2) = scale_min(2 * j + 1, scales);
        let (d1, m1) = (d * f32::from(s1), dmin * f32::from(m1));
        let (d2, m2) = (d * f32::from(s2), dmin * f32::from(m2));
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
    use super::*;

    /// Deterministic bytes (splitmix64).
    fn noise(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = x;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                (z ^ (z >> 31)) as u8
            })
            .collect()
    }

    #[test]
    fn every_build_decodes_any_bytes_as_candle_does_bit_for_bit() {
        let types = [
            Dtype::Q8_0,
            Dtype::Q4_0,
            Dtype::Q4_K,
            Dtype::Q5_K,
            Dtype::Q6_K,
        ];
        for (t, dtype) in types.into_iter().enumerate() {
            let (block_bytes, block_values) = Kind::of(dtype).expect("decoded here").sizes();
            // Random bytes: scales of every kind (NaN, infinite, subnormal,
            // zero) among them; one byte more, to read them unaligned too.
            let blocks = 600;
            let raw = noise(blocks * block_bytes + 1, 7 + t as u64);
            let mut want = vec![0f32; blocks * block_values];
            super::super::candle(dtype, &raw[..blocks * block_bytes], &mut want);
            for build in RowBuild::all() {
                for bytes in [&raw[..blocks * block_bytes], &raw[1..]] {
                    let mut got = vec![f32::NAN; want.len()];
                    assert!(dequantize_with(build, dtype, bytes, &mut got));
                    let mut expect = want.clone();
                    if bytes.as_ptr() != raw.as_ptr() {
                        super::super::candle(dtype, bytes, &mut expect);
                    }
                    let differ = got
                        .iter()
                        .zip(&expect)
                        .position(|(g, e)| g.to_bits() != e.to_bits());
                    assert_eq!(differ, None, "{dtype} {build:?}");
                }
            }
            assert!(want.iter().any(|v| v.is_nan()), "{dtype}: NaN scales met");
            assert!(want.iter().any(|v| v.is_finite() && *v != 0.0), "{dtype}");
        }
    }

    #[test]
    fn other_types_are_left_to_candle() {
        let mut out = [1f32; 32];
        assert!(!dequantize(Dtype::Q5_0, &[0; 22], &mut out));
        assert_eq!(out, [1.0; 32], "untouched");
    }
}
