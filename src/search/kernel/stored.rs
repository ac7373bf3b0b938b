//! How the in-place tiles of the `avx2` and `avx512` kernels read stored
//! rows: the stored forms they decode in registers (F32, BF16, F16 and
//! GGUF `Q8_0`), a block of such rows with its queries, and where a
//! column's bytes start, for the loads and the prefetches.

use std::array::from_fn;

use crate::cpu::prefetch_ahead;
use crate::dtype::Dtype;

/// The stored form of rows read in place, as a kernel's const parameter.
pub(super) const F32: u8 = 0;
/// See [`F32`].
pub(super) const BF16: u8 = 1;
/// See [`F32`].
pub(super) const F16: u8 = 2;
/// See [`F32`]: GGUF `Q8_0` blocks, decoded in registers (AVX-512 tiles
/// only).
pub(super) const Q8_0: u8 = 3;

/// A block's stored rows and its queries (`nq` of `cols` values each,
/// back to back), for the in-place tiles (here and in `avx2`).
pub(super) struct Block<'a> {
    pub bytes: &'a [u8],
    pub cols: usize,
    /// Stored bytes per row.
    pub row_bytes: usize,
    pub rows: usize,
    pub queries: &'a [f32],
    pub nq: usize,
}

impl<'a> Block<'a> {
    /// `bytes`, whole rows of `cols` values stored as `kind`, and `queries`;
    /// checks the lengths of the `norms` and `dots` they fill.
    pub(super) fn new(
        bytes: &'a [u8],
        kind: u8,
        cols: usize,
        queries: &'a [f32],
        norms: Option<&[f32]>,
        dots: &[f32],
    ) -> Self {
        assert!(
            cols > 0 && cols.is_multiple_of(block_values(kind)),
            "whole blocks"
        );
        let row_bytes = byte_of(kind, cols);
        assert!(bytes.len().is_multiple_of(row_bytes), "whole rows");
        assert!(queries.len().is_multiple_of(cols), "whole queries");
        let (rows, nq) = (bytes.len() / row_bytes, queries.len() / cols);
        assert_eq!(dots.len(), rows * nq, "dots length");
        if let Some(norms) = norms {
            assert_eq!(norms.len(), rows, "norms length");
        }
        Block {
            bytes,
            cols,
            row_bytes,
            rows,
            queries,
            nq,
        }
    }

    /// The stored bytes of rows `r0..r0 + R`.
    #[inline(always)]
    pub(super) fn row_tile<const R: usize>(&self, r0: usize) -> [&'a [u8]; R] {
        let n = self.row_bytes;
        from_fn(|r| &self.bytes[(r0 + r) * n..(r0 + r + 1) * n])
    }
}

/// Where column `c` (a multiple of 16) of a row stored as `kind` starts:
/// its value's byte, or its block's; panics on an unknown kind.
#[inline(always)]
pub(super) fn byte_of(kind: u8, c: usize) -> usize {
    match kind {
        F32 => 4 * c,
        BF16 | F16 => 2 * c,
        Q8_0 => c / 32 * 34,
        _ => panic!("unknown row kind {kind}"),
    }
}

/// Values per block of rows stored as `kind` (1 for the plain floats).
fn block_values(kind: u8) -> usize {
    match kind {
        Q8_0 => 32,
        _ => 1,
    }
}

/// In a tile's first read of its rows (the walk of query tile `q0 == 0`),
/// asks for each row's bytes further on (see `cpu::prefetch_ahead`) at
/// column `c`, once per 64-byte line, the rows stored as `KIND`.
#[inline(always)]
pub(super) fn prefetch_first_read<const KIND: u8>(rows: &[&[u8]], q0: usize, c: usize) {
    let at = byte_of(KIND, c);
    // Blocks do not end on lines: ask at each step that enters a new one.
    let new_line = match KIND {
        F32 | BF16 | F16 => at.is_multiple_of(64),
        _ => c == 0 || at / 64 != byte_of(KIND, c - 16) / 64,
    };
    if q0 == 0 && new_line {
        for row in rows {
            prefetch_ahead(row.as_ptr().wrapping_add(at));
        }
    }
}

/// The in-place kind of rows stored as `dtype`, if the tiles read it.
pub(super) fn kind(dtype: Dtype) -> Option<u8> {
    match dtype {
        Dtype::BF16 => Some(BF16),
        Dtype::F16 => Some(F16),
        Dtype::F32 => Some(F32),
        _ => None,
    }
}

/// The kind of rows stored as the block-quantized `dtype`, if the AVX-512
/// dot-style tiles decode its blocks in registers: the same values as
/// `Matrix::block_into` (see `matrix::quant`), so the same sums as on
/// the decoded block, without writing it out and reading it back. `Q8_0`
/// only: decoded in registers, one query on a Llama-3-shaped `Q8_0` matrix
/// takes about half the time it takes decoded a block at a time, but
/// `Q4_K` and `Q6_K`, whose scales are unpacked per 16 values in a tile's
/// column steps, take 1.7–1.9× longer, so they are decoded first.
pub(super) fn quant_kind(dtype: Dtype) -> Option<u8> {
    match dtype {
        Dtype::Q8_0 => Some(Q8_0),
        _ => None,
    }
}

/// The bytes of `values` (little-endian f32 on x86-64), for the tiles that
/// read F32 rows.
pub(super) fn f32_bytes(values: &[f32]) -> &[u8] {
    // SAFETY: any f32 slice is also a slice of its bytes.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), 4 * values.len()) }
}
