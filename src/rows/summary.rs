//! What a row holds, straight from its stored bytes, in one read: the
//! sum of squares and the L2 norm, whether it holds NaN, infinities or
//! only zeros, its duplicate key (see `key`), and when asked, the dot
//! product with one vector. `check`'s value pass summarises every row so.
//!
//! BF16 and F32 rows are read in place; other dtypes are converted to f32
//! a row at a time. Only the sum of squares is computed for every row: a
//! NaN or an infinity shows in it, and so does a zero row, so only rows
//! whose sum is 0, NaN or infinite are looked at value by value. The loops
//! are compiled as well for AVX-512 and for AVX2 + FMA, and the widest the
//! CPU has is chosen at run time (`cpu::RowBuild`). With the dot product,
//! BF16 and F32 rows ask for their bytes further on as they are read.
//! Sums are made by the loops `undertrained` uses too
//! (`dots::dots`: in f32 in 32 lanes, value `j` of each step of 32 in
//! lane `j`, and the lanes added in order), so that both commands get the
//! same sums; the norm is redone in f64 when f32 overflows or underflows.

use super::dots::dots;
use super::key::row_key;
use super::row::{Bf16, F32Bytes};
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
    out.reserve(n);
    scratch.resize(cols, 0.0);
    // Each row's summary as its sums come, while the row's bytes are still
    // in cache. One row at a time (as `dots_each` takes rows with at most
    // one vector), in a plain loop: called per row, a closure holding this
    // work was compiled apart, without the wide instructions.
    for i in 0..n {
        let (sum, dot) = match dtype {
            Dtype::BF16 => dots::<FMA, N>(Bf16(row(i)), vs),
            Dtype::F32 => dots::<FMA, N>(F32Bytes(row(i)), vs),
            _ => {
                convert(dtype, row(i), scratch);
                dots::<FMA, N>(scratch.as_slice(), vs)
            }
        };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rows::dots::madd;
    use crate::rows::row::L;
    use half::bf16;

    /// Every compiled path on one row.
    fn all_paths(dtype: Dtype, v: &[f32]) -> Vec<RowSummary> {
        let raw = dtype.encode(v);
        let mut scratch = Vec::new();
        let mut results = Vec::new();
        let mut run = |f: &dyn Fn(&mut Vec<f32>, &mut Vec<RowSummary>)| {
            let mut out = Vec::new();
            f(&mut scratch, &mut out);
            assert_eq!(out.len(), 1);
            results.push(out[0]);
        };
        run(&|s, o| summarize_with::<false>(dtype, v.len(), &raw, None, s, o));
        run(&|s, o| summarize(dtype, v.len(), &raw, None, s, o));
        results
    }

    #[test]
    fn sums_and_classes_on_every_path_and_dtype() {
        let v: Vec<f32> = (0..77).map(|i| (i as f32 - 30.0) * 0.25).collect();
        let exact: f64 = v
            .iter()
            .map(|&x| f64::from(x) * f64::from(x))
            .sum::<f64>()
            .sqrt();
        for dtype in [Dtype::F32, Dtype::BF16, Dtype::F16, Dtype::F64] {
            for s in all_paths(dtype, &v) {
                assert!((f64::from(s.norm) - exact).abs() < 1e-5 * exact, "{dtype}");
                assert!(!s.nan && !s.inf && !s.zero, "{dtype}");
            }
            let zeros = [0.0, -0.0, 0.0];
            for s in all_paths(dtype, &zeros) {
                assert!(s.zero && s.norm == 0.0 && !s.nan, "{dtype}");
            }
        }
    }

    #[test]
    fn dots_and_sums_add_in_value_order() {
        // Three steps of 32 values and a tail of 4, rounded to BF16 so that
        // every dtype stores the same values.
        let round = |x: f32| bf16::from_f32(x).to_f32();
        let v: Vec<f32> = (0..100)
            .map(|i| round(((i * 7919 % 1000) as f32 - 500.0) / 333.0))
            .collect();
        let m: Vec<f32> = (0..100).map(|i| (i as f32 - 50.0) / 61.0).collect();
        let dotted = m.clone();
        // As `undertrained` sums: value j in lane j % 32 over the whole
        // steps (fused on the wide builds), the lanes in order, the tail.
        let expect = |fma: bool, y: &[f32]| {
            let mut lanes = [0f32; L];
            for j in 0..96 {
                lanes[j % L] = madd_any(fma, lanes[j % L], v[j], y[j]);
            }
            let mut total: f32 = lanes.iter().sum();
            for j in 96..100 {
                total += v[j] * y[j];
            }
            total
        };
        for dtype in [Dtype::F32, Dtype::BF16, Dtype::F16] {
            let raw = dtype.encode(&v);
            let mut scratch = Vec::new();
            for fma in [false, true] {
                let mut out = Vec::new();
                if fma {
                    summarize_with::<true>(dtype, 100, &raw, Some(&dotted), &mut scratch, &mut out);
                } else {
                    summarize_with::<false>(
                        dtype,
                        100,
                        &raw,
                        Some(&dotted),
                        &mut scratch,
                        &mut out,
                    );
                }
                let r = out[0];
                assert_eq!(r.sq.to_bits(), expect(fma, &v).to_bits(), "{dtype} {fma}");
                assert_eq!(r.dot.to_bits(), expect(fma, &m).to_bits(), "{dtype} {fma}");
                assert_eq!(r.norm, r.sq.sqrt());
            }
            // The dispatched build agrees with one of the two, and without
            // a vector the sums are the same and the dot is 0.
            let (mut with, mut without) = (Vec::new(), Vec::new());
            summarize(dtype, 100, &raw, Some(&dotted), &mut scratch, &mut with);
            summarize(dtype, 100, &raw, None, &mut scratch, &mut without);
            assert!([expect(false, &m), expect(true, &m)].contains(&with[0].dot));
            assert_eq!((without[0].sq, without[0].dot), (with[0].sq, 0.0));
            let exact: f64 = v
                .iter()
                .zip(&m)
                .map(|(&a, &b)| f64::from(a) * f64::from(b))
                .sum();
            assert!((f64::from(with[0].dot) - exact).abs() < 1e-5 * exact.abs().max(1.0));
        }
    }

    fn madd_any(fma: bool, acc: f32, x: f32, y: f32) -> f32 {
        if fma {
            madd::<true>(x, y, acc)
        } else {
            madd::<false>(x, y, acc)
        }
    }

    #[test]
    fn nan_inf_and_out_of_range_squares() {
        for dtype in [Dtype::F32, Dtype::BF16, Dtype::F16] {
            let mut v = vec![1.0f32; 40];
            v[33] = f32::NAN;
            for s in all_paths(dtype, &v) {
                assert!(s.nan && !s.inf && s.norm.is_nan(), "{dtype}");
            }
            v[3] = f32::NEG_INFINITY;
            for s in all_paths(dtype, &v) {
                assert!(s.nan && s.inf, "{dtype}");
            }
            v[33] = 1.0;
            for s in all_paths(dtype, &v) {
                assert!(!s.nan && s.inf && !s.zero, "{dtype}");
            }
        }
        // Squares past f32::MAX and below its smallest subnormal: the sum
        // is redone in f64.
        let big = [3e30f32, 4e30];
        for s in all_paths(Dtype::F32, &big) {
            assert!((s.norm / 5e30 - 1.0).abs() < 1e-6 && !s.inf, "{s:?}");
        }
        let tiny = [3e-30f32, 4e-30, 0.0];
        for s in all_paths(Dtype::F32, &tiny) {
            assert!((s.norm / 5e-30 - 1.0).abs() < 1e-6 && !s.zero, "{s:?}");
        }
    }
}
