//! Dequantizing the block-quantized GGUF types (`Q8_0`, `Q4_K` ...), every
//! one GGUF has: the common ones (and `IQ3_S`) with decoders of our own
//! (see [`blocks`]), the other codebook types (`IQ1_S` to `IQ3_XXS`) and
//! `TQ1_0` with the `ferrox-quant` crate's (see [`codebook`]), and the two
//! 8-bit types llama.cpp never stores (`Q8_1`, `Q8_K`) with candle's
//! `k_quants` (`GgmlType::to_float`), straight from the mapped bytes when
//! they are aligned for the block struct, else through a small aligned
//! copy. Ours and candle's give the same values to the bit.

use std::mem::{align_of, size_of};

use candle_core::quantized::k_quants::{
    BlockQ2K, BlockQ3K, BlockQ4_0, BlockQ4_1, BlockQ4K, BlockQ5_0, BlockQ5_1, BlockQ5K, BlockQ6K,
    BlockQ8_0, BlockQ8_1, BlockQ8K, GgmlType,
};

use crate::dtype::Dtype;

mod blocks;
mod codebook;

/// Blocks copied per step when the bytes are not aligned.
const COPY_BLOCKS: usize = 64;

/// Decodes whole blocks of `dtype` in `bytes` into `out`, which holds
/// exactly their values.
///
/// Panics if `dtype` is not block-quantized or the lengths disagree;
/// [`super::Matrix::new`] guarantees neither happens.
pub(crate) fn dequantize(dtype: Dtype, bytes: &[u8], out: &mut [f32]) {
    if blocks::dequantize(dtype, bytes, out) || codebook::dequantize(dtype, bytes, out) {
        return;
    }
    candle(dtype, bytes, out);
}

/// [`dequantize`] by candle's `GgmlType::to_float`: for `Q8_1` and `Q8_K`,
/// and the reference the tests compare the decoders of [`blocks`] with.
fn candle(dtype: Dtype, bytes: &[u8], out: &mut [f32]) {
    match dtype {
        Dtype::Q4_0 => blocks::<BlockQ4_0>(bytes, out),
        Dtype::Q4_1 => blocks::<BlockQ4_1>(bytes, out),
        Dtype::Q5_0 => blocks::<BlockQ5_0>(bytes, out),
        Dtype::Q5_1 => blocks::<BlockQ5_1>(bytes, out),
        Dtype::Q8_0 => blocks::<BlockQ8_0>(bytes, out),
        Dtype::Q8_1 => blocks::<BlockQ8_1>(bytes, out),
        Dtype::Q2_K => blocks::<BlockQ2K>(bytes, out),
        Dtype::Q3_K => blocks::<BlockQ3K>(bytes, out),
        Dtype::Q4_K => blocks::<BlockQ4K>(bytes, out),
        Dtype::Q5_K => blocks::<BlockQ5K>(bytes, out),
        Dtype::Q6_K => blocks::<BlockQ6K>(bytes, out),
        Dtype::Q8_K => blocks::<BlockQ8K>(bytes, out),
        other => unreachable!("{other} is not block-quantized"),
    }
}

/// [`dequantize`] for the block struct `T`.
fn blocks<T: GgmlType>(bytes: &[u8], out: &mut [f32]) {
    let size = size_of::<T>();
    let n = bytes.len() / size;
    assert!(
        bytes.len() == n * size && out.len() == n * T::BLCK_SIZE,
        "{} bytes of {size}-byte blocks into {} values",
        bytes.len(),
        out.len()
    );
    if bytes.as_ptr().align_offset(align_of::<T>()) == 0 {
        // SAFETY: the pointer is aligned for `T` and `n * size_of::<T>()`
        // bytes from it are in `bytes`. Every `T` is a `repr(C)` struct of
        // integers, integer arrays and f16/f32 scales, with no padding (its
        // size equals ggml's block size, see `dtype::QUANTIZED`), so any
        // bytes are a valid value.
        let typed = unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), n) };
        T::to_float(typed, out);
        return;
    }
    // An 8-byte aligned buffer is aligned for every block struct (at most 4).
    let mut buf = vec![0u64; (COPY_BLOCKS * size).div_ceil(8)];
    for (raw, out) in bytes
        .chunks(COPY_BLOCKS * size)
        .zip(out.chunks_mut(COPY_BLOCKS * T::BLCK_SIZE))
    {
        let k = raw.len() / size;
        // SAFETY: `buf` holds at least `COPY_BLOCKS * size` bytes, more than
        // `raw.len()`, and u64 has no invalid bit patterns as bytes.
        let dst =
            unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<u8>(), raw.len()) };
        dst.copy_from_slice(raw);
        // SAFETY: as above; `buf` is 8-byte aligned and holds `k` blocks.
        let typed = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<T>(), k) };
        T::to_float(typed, out);
    }
}

/// Deterministic bytes (splitmix64), for the decoders' tests.
#[cfg(test)]
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

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::quantized::{GgmlDType, QTensor};
    use candle_core::{Device, Tensor};

    /// Quantizes `values` with candle and returns the bytes and candle's
    /// own dequantization.
    fn quantized(values: &[f32], g: GgmlDType) -> (Vec<u8>, Vec<f32>) {
        let t = Tensor::from_slice(values, (values.len(),), &Device::Cpu).unwrap();
        let q = QTensor::quantize(&t, g).unwrap();
        let back = q
            .dequantize(&Device::Cpu)
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        (q.data().unwrap().into_owned(), back)
    }

    #[test]
    fn every_block_quantized_type_decodes() {
        for dtype in Dtype::quantized() {
            let (values, bytes) = dtype.block();
            let (values, bytes) = (values as usize, bytes as usize);
            // Blocks of zero bytes have a zero scale: every value is ±0.
            let mut out = vec![f32::NAN; 3 * values];
            dequantize(dtype, &vec![0; 3 * bytes], &mut out);
            assert!(out.iter().all(|&v| v == 0.0), "{dtype}: {out:?}");
            // Blocks of one byte repeated have a scale of the same bytes.
            dequantize(dtype, &vec![0x3C; 3 * bytes], &mut out);
            assert!(out.iter().all(|v| v.is_finite()), "{dtype}");
            assert!(out.iter().any(|&v| v != 0.0), "{dtype}");
            // Any bytes decode (every index within its codebook).
            let noise = noise(200 * bytes, 11);
            let mut out = vec![0f32; 200 * values];
            dequantize(dtype, &noise, &mut out);
        }
    }

    #[test]
    fn the_types_candle_lacks_decode_as_llama_cpp_does() {
        // 256 values of each type from the bytes (37 i + 11) mod 256, the
        // blocks' f16 scale set to 1 (MXFP4: exponent 127; IQ1_M and
        // NVFP4, whose E4M3 scales stay as the bytes make them, have no
        // f16 scale field); the values at 0, 1, 37, 100 and 255 and the sum of
        // all, as the `gguf` Python package (0.19.0) dequantizes them.
        let cases: [(Dtype, Option<usize>, [f32; 5], f64); 13] = [
            (
                Dtype::IQ1_S,
                Some(0),
                [-2.625, 0.375, 14.625, 13.125, -4.375],
                20.0,
            ),
            (
                Dtype::IQ1_M,
                None,
                [52920.0, -370440.0, 370440.0, 204120.0, 113400.0],
                -2479680.0,
            ),
            (
                Dtype::IQ2_XXS,
                Some(0),
                [-59.125, 59.125, 53.125, 27.0, -80.625],
                763.75,
            ),
            (
                Dtype::IQ2_XS,
                Some(0),
                [-11.0, 34.375, 112.875, -9.0, -19.0],
                1490.5,
            ),
            (
                Dtype::IQ2_S,
                Some(0),
                [-145.125, 84.375, 26.875, -25.0, 78.125],
                -800.625,
            ),
            (
                Dtype::IQ3_XXS,
                Some(0),
                [-13.0, 9.0, -133.0, -25.0, -15.0],
                -684.0,
            ),
            (
                Dtype::IQ3_S,
                Some(0),
                [-81.0, 243.0, 165.0, -17.0, 225.0],
                1456.0,
            ),
            (Dtype::TQ1_0, Some(52), [-1.0, -1.0, -1.0, 1.0, -1.0], -2.0),
            (Dtype::TQ2_0, Some(64), [2.0, -1.0, 0.0, 1.0, -1.0], 129.0),
            (Dtype::MXFP4, None, [0.0, 3.0, -4.0, 1.5, 0.0], 3.5),
            (
                Dtype::NVFP4,
                None,
                [
                    -0.128_906_25,
                    0.042_968_75,
                    0.0,
                    0.105_468_75,
                    -0.082_031_25,
                ],
                1_049.224_609_375,
            ),
            (
                Dtype::IQ4_NL,
                Some(0),
                [-35.0, 25.0, 1.0, -10.0, 38.0],
                -1238.0,
            ),
            (
                Dtype::IQ4_XS,
                Some(0),
                [65.0, -1.0, -371.0, 40.0, -16.0],
                -11005.0,
            ),
        ];
        for (dtype, scale_at, want, sum) in cases {
            let (values, size) = dtype.block();
            let (values, size) = (values as usize, size as usize);
            let blocks = 256 / values;
            let mut bytes: Vec<u8> = (0..blocks * size).map(|i| (i * 37 + 11) as u8).collect();
            for block in bytes.chunks_exact_mut(size) {
                match (dtype, scale_at) {
                    (Dtype::MXFP4, _) => block[0] = 127,
                    (_, Some(at)) => block[at..at + 2].copy_from_slice(&[0x00, 0x3C]),
                    (_, None) => {}
                }
            }
            let mut out = vec![f32::NAN; 256];
            dequantize(dtype, &bytes, &mut out);
            let got = [0, 1, 37, 100, 255].map(|i| out[i]);
            assert_eq!(got, want, "{dtype}");
            assert_eq!(
                out.iter().map(|&v| f64::from(v)).sum::<f64>(),
                sum,
                "{dtype}"
            );
        }
    }

    #[test]
    fn quantized_rows_are_whole_blocks() {
        let values: Vec<f32> = (0..512).map(|i| (i % 13) as f32 - 6.0).collect();
        let (bytes, want) = quantized(&values, GgmlDType::Q4K);
        let m = super::super::Matrix::new("w", &bytes, Dtype::Q4_K, &[2, 256]).unwrap();
        assert_eq!(m.row_len_bytes(), 144);
        assert_eq!(m.row_bytes(1), &bytes[144..]);
        assert_eq!(m.row(1), want[256..]);
        let err = super::super::Matrix::new("w", &bytes, Dtype::Q4_K, &[4, 128]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "tensor `w` of Q4_K has rows of 128 values, not a multiple of the 256-value block"
        );
        let err = super::super::Matrix::new("w", &bytes, Dtype::Q4_K, &[3, 256]).unwrap_err();
        assert!(
            err.to_string().contains("needs 432 bytes, found 288"),
            "{err}"
        );
    }

    #[test]
    fn matches_candle_aligned_and_not() {
        let values: Vec<f32> = (0..512 * 3)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 17.0)
            .collect();
        for (d, g) in [
            (Dtype::Q4_0, GgmlDType::Q4_0),
            (Dtype::Q5_1, GgmlDType::Q5_1),
            (Dtype::Q8_0, GgmlDType::Q8_0),
            (Dtype::Q2_K, GgmlDType::Q2K),
            (Dtype::Q4_K, GgmlDType::Q4K),
            (Dtype::Q6_K, GgmlDType::Q6K),
            (Dtype::Q8_K, GgmlDType::Q8K),
        ] {
            let (bytes, want) = quantized(&values, g);
            let mut shifted = vec![0u8; bytes.len() + 1];
            shifted[1..].copy_from_slice(&bytes);
            for b in [&bytes[..], &shifted[1..]] {
                let mut got = vec![0f32; values.len()];
                dequantize(d, b, &mut got);
                assert_eq!(got, want, "{d}");
            }
        }
    }
}
