//! Typed row access over the mapped bytes of a 2-D floating-point tensor.
//!
//! A [`Matrix`] is a view: it borrows the little-endian, row-major bytes of
//! one tensor (usually a slice of a memory-mapped shard) and converts rows or
//! blocks of rows to `f32` on demand. Reading a row touches only that row's
//! bytes. The bytes may sit at any address: conversions never reinterpret
//! `&[u8]` as wider integers, they decode through small aligned buffers.
//!
//! Rows of the block-quantized GGUF types are whole blocks; they are
//! dequantized per block of rows (see `quant`), so memory stays flat.

mod quant;

use half::f16;
use half::slice::{HalfBitsSliceExt, HalfFloatSliceExt};

use crate::dtype::Dtype;
use crate::error::{Error, Result};

/// The dtypes a [`Matrix`] can hold, in the order error messages list them.
const SUPPORTED: [Dtype; 6] = [
    Dtype::F64,
    Dtype::F32,
    Dtype::F16,
    Dtype::BF16,
    Dtype::F8_E4M3,
    Dtype::F8_E5M2,
];

/// Elements decoded per step when 16-bit values go through a `u16` buffer.
const CHUNK: usize = 256;

/// Every F8_E4M3 byte as f32, computed at compile time by the `float8` crate.
static E4M3: [f32; 256] = f8_table(false);
/// Every F8_E5M2 byte as f32, computed at compile time by the `float8` crate.
static E5M2: [f32; 256] = f8_table(true);

const fn f8_table(e5m2: bool) -> [f32; 256] {
    let mut table = [0.0f32; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = if e5m2 {
            float8::F8E5M2::from_bits(i as u8).to_f32()
        } else {
            float8::F8E4M3::from_bits(i as u8).to_f32()
        };
        i += 1;
    }
    table
}

/// A `rows × cols` matrix stored as little-endian, row-major bytes.
#[derive(Debug, Clone, Copy)]
pub struct Matrix<'a> {
    name: &'a str,
    bytes: &'a [u8],
    dtype: Dtype,
    rows: usize,
    cols: usize,
    row_bytes: usize,
}

impl<'a> Matrix<'a> {
    /// A view of `bytes` as the 2-D tensor `name` of `dtype` and `shape`.
    ///
    /// Fails with [`Error::BadInput`] when the shape is not 2-D, has no
    /// columns, has more rows than 32-bit token ids can address, the dtype
    /// is neither a supported float type nor a block-quantized one, a row is not
    /// whole blocks, or `bytes` is not exactly `rows` rows long.
    pub fn new(name: &'a str, bytes: &'a [u8], dtype: Dtype, shape: &[usize]) -> Result<Self> {
        if !SUPPORTED.contains(&dtype) && !dtype.is_quantized() {
            let names: Vec<&str> = SUPPORTED.iter().map(|d| d.name()).collect();
            return Err(Error::BadInput(format!(
                "tensor `{name}` is {dtype}; a vocabulary layer needs a floating-point matrix ({})",
                names.join(", ")
            )));
        }
        let &[rows, cols] = shape else {
            return Err(Error::BadInput(format!(
                "tensor `{name}` has shape {shape:?}; a vocabulary layer needs a 2-D matrix"
            )));
        };
        if u32::try_from(rows).is_err() {
            return Err(Error::BadInput(format!(
                "tensor `{name}` has {rows} rows; token ids are 32-bit, so at most {} rows",
                u32::MAX
            )));
        }
        if cols == 0 {
            return Err(Error::BadInput(format!(
                "tensor `{name}` has shape [{rows}, 0]; a vocabulary layer needs at least one column"
            )));
        }
        let (block, _) = dtype.block();
        if !(cols as u64).is_multiple_of(block) {
            return Err(Error::BadInput(format!(
                "tensor `{name}` of {dtype} has rows of {cols} values, not a multiple of the {block}-value block"
            )));
        }
        let row_bytes = dtype
            .bytes_for(cols as u64)
            .and_then(|b| usize::try_from(b).ok());
        let expected = row_bytes.and_then(|b| rows.checked_mul(b));
        if expected != Some(bytes.len()) {
            return Err(Error::BadInput(format!(
                "tensor `{name}` of shape [{rows}, {cols}] {dtype} needs {} bytes, found {}",
                expected.map_or_else(|| "more than usize::MAX".to_string(), |n| n.to_string()),
                bytes.len()
            )));
        }
        Ok(Matrix {
            name,
            bytes,
            dtype,
            rows,
            cols,
            row_bytes: row_bytes.unwrap_or(0),
        })
    }

    /// Row `id` as f32, or an error naming the valid ids when it is out of
    /// range (for ids that come from the user or a file).
    pub fn checked_row(&self, id: u64) -> Result<Vec<f32>> {
        match usize::try_from(id) {
            Ok(i) if i < self.rows => Ok(self.row(i)),
            _ => Err(Error::IdOutOfRange {
                flag: None,
                id,
                tensor: self.name.to_string(),
                rows: self.rows,
            }),
        }
    }

    /// Number of rows (the vocabulary size for an embedding).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of columns (the hidden size).
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The stored element type.
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }

    /// The tensor's name, for messages.
    pub fn name(&self) -> &str {
        self.name
    }

    /// All the stored bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Bytes taken by one row (whole blocks for a block-quantized type).
    pub fn row_len_bytes(&self) -> usize {
        self.row_bytes
    }

    /// Row `i` converted to f32 (exactly; F64 rounds to nearest).
    ///
    /// Panics if `i >= rows`; callers check ids first.
    pub fn row(&self, i: usize) -> Vec<f32> {
        let mut out = vec![0.0; self.cols];
        self.block_into(i..i + 1, &mut out);
        out
    }

    /// The stored bytes of row `i`. Panics if `i >= rows`.
    pub fn row_bytes(&self, i: usize) -> &'a [u8] {
        self.block_bytes(i..i + 1)
    }

    /// The stored bytes of `rows`. Panics if the range reaches past the end.
    pub fn block_bytes(&self, rows: std::ops::Range<usize>) -> &'a [u8] {
        assert!(
            rows.start <= rows.end && rows.end <= self.rows,
            "rows {rows:?} out of range for tensor `{}` with {} rows",
            self.name,
            self.rows
        );
        let rb = self.row_len_bytes();
        &self.bytes[rows.start * rb..rows.end * rb]
    }

    /// Rows `rows` converted to f32, row-major, into `out`, which must be
    /// `rows.len() * cols` long.
    ///
    /// Panics if the range reaches past the end or `out` has the wrong length.
    pub fn block_into(&self, rows: std::ops::Range<usize>, out: &mut [f32]) {
        let n = rows.len();
        let bytes = self.block_bytes(rows);
        assert_eq!(out.len(), n * self.cols, "output length for {n} rows");
        convert(self.dtype, bytes, out);
    }
}

/// Decodes `bytes` (little-endian elements, or whole blocks, of `dtype`)
/// into `out`.
///
/// `dtype` must be one of [`SUPPORTED`] or block-quantized and `bytes.len()`
/// must hold `out.len()` values; [`Matrix::new`] guarantees both.
pub(crate) fn convert(dtype: Dtype, bytes: &[u8], out: &mut [f32]) {
    match dtype {
        Dtype::F32 => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
        Dtype::F64 => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(8)) {
                *o = f64::from_le_bytes(b.try_into().expect("8 bytes")) as f32;
            }
        }
        Dtype::BF16 => {
            // A BF16 value is the top half of the f32 with the same bits.
            // `bf16::to_f32` also sets the quiet bit of NaNs, and that branch
            // keeps the loop from vectorising (about 10× slower); the values
            // are otherwise identical.
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                *o = f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16);
            }
        }
        Dtype::F16 => {
            let mut bits = [0u16; CHUNK];
            for (o, b) in out.chunks_mut(CHUNK).zip(bytes.chunks(CHUNK * 2)) {
                let bits = &mut bits[..o.len()];
                for (x, b) in bits.iter_mut().zip(b.chunks_exact(2)) {
                    *x = u16::from_le_bytes([b[0], b[1]]);
                }
                let halves: &[f16] = bits.reinterpret_cast();
                halves.convert_to_f32_slice(o);
            }
        }
        Dtype::F8_E4M3 | Dtype::F8_E5M2 => {
            let table = if dtype == Dtype::F8_E4M3 {
                &E4M3
            } else {
                &E5M2
            };
            for (o, &b) in out.iter_mut().zip(bytes) {
                *o = table[b as usize];
            }
        }
        q if q.is_quantized() => quant::dequantize(q, bytes, out),
        other => unreachable!("Matrix::new rejects {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::bf16;

    fn one(dtype: Dtype, bytes: &[u8]) -> f32 {
        let m = Matrix::new("t", bytes, dtype, &[1, 1]).unwrap();
        m.row(0)[0]
    }

    #[test]
    fn known_bits_of_every_dtype() {
        let cases: &[(Dtype, &[u8], f32)] = &[
            (Dtype::BF16, &0x3F80u16.to_le_bytes(), 1.0),
            (Dtype::BF16, &0xC000u16.to_le_bytes(), -2.0),
            (Dtype::BF16, &0x7F80u16.to_le_bytes(), f32::INFINITY),
            (
                Dtype::BF16,
                &0x0001u16.to_le_bytes(),
                f32::from_bits(0x0001_0000),
            ),
            (Dtype::F16, &0x3C00u16.to_le_bytes(), 1.0),
            (Dtype::F16, &0xC000u16.to_le_bytes(), -2.0),
            (Dtype::F16, &0xFC00u16.to_le_bytes(), f32::NEG_INFINITY),
            (Dtype::F16, &0x0001u16.to_le_bytes(), 2f32.powi(-24)),
            (Dtype::F16, &0x7BFFu16.to_le_bytes(), 65504.0),
            (Dtype::F32, &1.5f32.to_le_bytes(), 1.5),
            (Dtype::F64, &0.1f64.to_le_bytes(), 0.1f32),
            (Dtype::F64, &1e300f64.to_le_bytes(), f32::INFINITY),
            (Dtype::F8_E4M3, &[0x38], 1.0),
            (Dtype::F8_E4M3, &[0xC0], -2.0),
            (Dtype::F8_E4M3, &[0x7E], 448.0),
            (Dtype::F8_E4M3, &[0x01], 2f32.powi(-9)),
            (Dtype::F8_E5M2, &[0x3C], 1.0),
            (Dtype::F8_E5M2, &[0xC0], -2.0),
            (Dtype::F8_E5M2, &[0x7C], f32::INFINITY),
            (Dtype::F8_E5M2, &[0x7B], 57344.0),
            (Dtype::F8_E5M2, &[0x01], 2f32.powi(-16)),
        ];
        for &(dtype, bytes, want) in cases {
            let got = one(dtype, bytes);
            assert_eq!(got.to_bits(), want.to_bits(), "{dtype} {bytes:02x?}: {got}");
        }
        let nans: &[(Dtype, &[u8])] = &[
            (Dtype::BF16, &0x7FC0u16.to_le_bytes()),
            (Dtype::F16, &0x7E00u16.to_le_bytes()),
            (Dtype::F32, &f32::NAN.to_le_bytes()),
            (Dtype::F64, &f64::NAN.to_le_bytes()),
            (Dtype::F8_E4M3, &[0x7F]),
            (Dtype::F8_E4M3, &[0xFF]),
            (Dtype::F8_E5M2, &[0x7E]),
        ];
        for &(dtype, bytes) in nans {
            assert!(one(dtype, bytes).is_nan(), "{dtype} {bytes:02x?}");
        }
    }

    #[test]
    fn bf16_matches_the_half_crate_for_every_bit_pattern() {
        let bytes: Vec<u8> = (0..=u16::MAX).flat_map(u16::to_le_bytes).collect();
        let m = Matrix::new("t", &bytes, Dtype::BF16, &[1, 1 << 16]).unwrap();
        for (bits, got) in (0..=u16::MAX).zip(m.row(0)) {
            let want = half::bf16::from_bits(bits).to_f32();
            assert!(got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()));
        }
    }

    #[test]
    fn f8_tables_match_the_crate() {
        for b in 0..=255u8 {
            let e4 = float8::F8E4M3::from_bits(b).to_f32();
            let e5 = float8::F8E5M2::from_bits(b).to_f32();
            assert!(E4M3[b as usize].to_bits() == e4.to_bits() || e4.is_nan());
            assert!(E5M2[b as usize].to_bits() == e5.to_bits() || e5.is_nan());
        }
    }

    #[test]
    fn unaligned_rows_and_blocks() {
        // 3 × 300 F16 and BF16 values (more than one CHUNK per block) at an odd address.
        let values: Vec<f32> = (0..900).map(|i| ((i % 200) as f32 - 100.0) / 8.0).collect();
        for dtype in [Dtype::F16, Dtype::BF16, Dtype::F32, Dtype::F64] {
            let mut buf = vec![0u8];
            for &v in &values {
                match dtype {
                    Dtype::F16 => buf.extend(f16::from_f32(v).to_le_bytes()),
                    Dtype::BF16 => buf.extend(bf16::from_f32(v).to_le_bytes()),
                    Dtype::F32 => buf.extend(v.to_le_bytes()),
                    _ => buf.extend((v as f64).to_le_bytes()),
                }
            }
            let m = Matrix::new("t", &buf[1..], dtype, &[3, 300]).unwrap();
            assert_eq!(m.row(1), &values[300..600], "{dtype}");
            let mut block = vec![0.0; 600];
            m.block_into(1..3, &mut block);
            assert_eq!(block, &values[300..], "{dtype}");
            assert_eq!(m.row_bytes(2).len(), 300 * (dtype.bits() / 8) as usize);
            assert_eq!(
                m.row_bytes(2).as_ptr(),
                buf[1 + 600 * (dtype.bits() / 8) as usize..].as_ptr()
            );
        }
    }

    #[test]
    fn rejects_bad_dtype_shape_and_length() {
        let bytes = [0u8; 16];
        let err = Matrix::new("w", &bytes, Dtype::I32, &[2, 2]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "tensor `w` is I32; a vocabulary layer needs a floating-point matrix \
             (F64, F32, F16, BF16, F8_E4M3, F8_E5M2)"
        );
        let err = Matrix::new("w", &bytes, Dtype::F32, &[4]).unwrap_err();
        assert!(err.to_string().contains("shape [4]"), "{err}");
        let err = Matrix::new("w", &bytes, Dtype::F32, &[2, 3]).unwrap_err();
        assert!(
            err.to_string().contains("needs 24 bytes, found 16"),
            "{err}"
        );
        let err = Matrix::new("w", &bytes, Dtype::F32, &[3, usize::MAX]).unwrap_err();
        assert!(err.to_string().contains("more than usize::MAX"), "{err}");
        let err = Matrix::new("w", &bytes, Dtype::F32, &[usize::MAX, 3]).unwrap_err();
        assert!(err.to_string().contains("token ids are 32-bit"), "{err}");
        assert!(Matrix::new("w", &bytes, Dtype::F32, &[0, 4]).is_err());
        let err = Matrix::new("w", &[], Dtype::BF16, &[400, 0]).unwrap_err();
        assert!(err.to_string().contains("shape [400, 0]"), "{err}");
        assert_eq!(
            Matrix::new("w", &[], Dtype::F32, &[0, 4]).unwrap().rows(),
            0
        );
    }

    #[test]
    fn checked_rows_past_the_end_are_ids_out_of_range() {
        let bytes = [0u8; 8];
        let m = Matrix::new("w", &bytes, Dtype::F32, &[2, 1]).unwrap();
        assert_eq!(m.checked_row(1).unwrap(), [0.0]);
        for id in [2, u64::MAX] {
            let err = m.checked_row(id).unwrap_err();
            assert!(
                matches!(&err, Error::IdOutOfRange { flag: None, id: i, rows: 2, .. } if *i == id),
                "{err}"
            );
        }
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn row_past_the_end_panics() {
        let bytes = [0u8; 8];
        Matrix::new("w", &bytes, Dtype::F32, &[2, 1])
            .unwrap()
            .row(2);
    }
}
