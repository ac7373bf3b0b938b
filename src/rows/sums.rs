//! The per-row sums `[|r|², r·m, r·c]` of a block of rows against up to
//! two vectors (0 for a vector not given, which costs nothing), NaN for a
//! row that is not finite: `undertrained`'s passes make them for every
//! row. BF16 rows are read in place (see `row`), other dtypes converted to
//! f32 a block at a time. The block work is compiled for AVX-512 and for
//! AVX2, both with fused multiply-adds and the same sums bit for bit, and
//! portable; the widest the CPU has runs (see `cpu::RowBuild`).

use std::ops::Range;

use super::dots::dots_each;
use super::row::Bf16;
use crate::cpu::{Isa, PORTABLE_FUSES, RowBuild};
use crate::dtype::Dtype;
use crate::matrix::Matrix;

/// A block's rows and the vectors they are dotted with.
#[derive(Clone, Copy)]
struct Rows<'a> {
    /// The rows decoded to f32 (dtypes other than BF16).
    buf: &'a [f32],
    /// Whole BF16 rows as stored, read in place (decoded in registers, so
    /// the decoding shares the wide instructions); then `buf` is unused.
    raw: Option<&'a [u8]>,
    cols: usize,
    /// The reference mean, if known.
    mean: Option<&'a [f32]>,
    /// The principal component, if any.
    pc: Option<&'a [f32]>,
}

/// The block's per-row sums `|r|²`, `r·m` and `r·c` (0 for a vector not
/// given, which costs nothing), NaN for a row that is not finite,
/// appended to `out`.
#[inline(always)]
fn block_body<const FMA: bool>(b: Rows, out: &mut Vec<[f32; 3]>) {
    match (b.mean, b.pc) {
        (Some(m), Some(c)) => rows::<FMA, 2>(b, [m, c], [1, 2], out),
        (Some(m), None) => rows::<FMA, 1>(b, [m], [1], out),
        (None, Some(c)) => rows::<FMA, 1>(b, [c], [2], out),
        (None, None) => rows::<FMA, 0>(b, [], [], out),
    }
}

/// [`block_body`] with the `N` vectors given, whose dot products go to
/// the places `at` of each row's sums.
#[inline(always)]
fn rows<const FMA: bool, const N: usize>(
    b: Rows,
    vs: [&[f32]; N],
    at: [usize; N],
    out: &mut Vec<[f32; 3]>,
) {
    let Rows { buf, raw, cols, .. } = b;
    let n = raw.map_or(buf.len(), |raw| raw.len() / 2) / cols;
    out.reserve(n);
    let put = |(sq, d): (f32, [f32; N])| {
        let mut sums = [sq, 0.0, 0.0];
        for (k, v) in at.into_iter().zip(d) {
            sums[k] = v;
        }
        out.push(if sq.is_finite() { sums } else { [f32::NAN; 3] });
    };
    match raw {
        Some(raw) => {
            let row = |i: usize| Bf16(&raw[i * cols * 2..(i + 1) * cols * 2]);
            dots_each::<FMA, N, _>(n, row, vs, put);
        }
        None => dots_each::<FMA, N, _>(n, |i| &buf[i * cols..(i + 1) * cols], vs, put),
    }
}

/// [`block_body`] compiled for AVX-512, with fused multiply-adds.
///
/// # Safety
/// The CPU must have AVX-512F and BW, and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,fma")]
unsafe fn block_avx512(b: Rows, out: &mut Vec<[f32; 3]>) {
    block_body::<true>(b, out)
}

/// [`block_body`] compiled for AVX2, with fused multiply-adds.
///
/// # Safety
/// The CPU must have AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn block_avx2(b: Rows, out: &mut Vec<[f32; 3]>) {
    block_body::<true>(b, out)
}

/// [`block_body`] in the `build` given.
fn block(build: RowBuild, b: Rows, out: &mut Vec<[f32; 3]>) {
    match build.isa() {
        // SAFETY: a `RowBuild` runs only on a CPU with its instructions.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { block_avx512(b, out) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { block_avx2(b, out) },
        _ => block_body::<PORTABLE_FUSES>(b, out),
    }
}

/// The block of whole `rows` of `m` (`buf` holds the decoded values of
/// other dtypes than BF16, which are read in place): its per-row sums,
/// appended to `out`.
pub(crate) fn block_sums(
    build: RowBuild,
    m: &Matrix,
    buf: &mut Vec<f32>,
    rows: Range<usize>,
    mean: Option<&[f32]>,
    pc: Option<&[f32]>,
    out: &mut Vec<[f32; 3]>,
) {
    let bf16 = m.dtype() == Dtype::BF16;
    let raw = m.block_bytes(rows.clone());
    if !bf16 {
        buf.resize(rows.len() * m.cols(), 0.0);
        m.block_into(rows, buf);
    }
    let (raw, cols) = (bf16.then_some(raw), m.cols());
    block(
        build,
        Rows {
            buf,
            raw,
            cols,
            mean,
            pc,
        },
        out,
    )
}
