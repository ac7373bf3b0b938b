//! The head pass's row loop on CPUs with AVX512_BF16 (Zen 4 and later,
//! Intel since Cooper Lake): `|r|²`, `r·m` and `r·c` of BF16 rows read in
//! place with `vdpbf16ps`, which multiplies pairs of BF16 values and adds
//! both products to an f32 lane in one instruction, so the row is never
//! widened to f32. The two vectors (the reference mean `m` and the
//! component `c`) must be BF16 values themselves: an untied head's pass
//! dots with both rounded to BF16 (see [`rounded`] and `plan`), on every
//! CPU, so this loop and the f32 loops (see `dots`) dot the same values.
//! The products of two BF16 values are exact in f32 and the sums are kept
//! in f32, so the two loops' sums differ only by the order of the
//! additions (a lane here adds two products at a time), and in that
//! `vdpbf16ps` reads BF16 subnormals as zero: in their last bits.
//! `EMBSCOPE_CPU_MASK=avx512bf16` runs the f32 loops instead.
//!
//! Why: the f32 loops widen each value and make three multiply-adds of it,
//! in tiles of 8 rows so that the vectors are read from L1 once per tile;
//! this loop makes three `vdpbf16ps` per 32 values of a row, one row at a
//! time, the two vectors (16 KiB together for a 4096-wide row) staying in
//! L1 while a row streams past, and reads a head about a fifth faster.
//! The vectors are rounded to BF16 rather than held as two BF16 halves
//! each (nearly f32's precision): at 32 KiB they would no longer stay in
//! L1, and the loop would lose what it gains.

use crate::aligned::Aligned;
use crate::cpu::prefetch_ahead;

/// Values per step: one 64-byte load of a BF16 row.
const STEP: usize = 32;

/// `v` with each value rounded to the nearest BF16 (ties to even).
pub(crate) fn rounded(v: &[f32]) -> Aligned<f32> {
    v.iter()
        .map(|&x| half::bf16::from_f32(x).to_f32())
        .collect()
}

/// The reference mean and the component as BF16 bits, laid out step by
/// step: for each [`STEP`] values, `m`'s then `c`'s (the last step padded
/// with zeros), so the loop reads one stream of 128 bytes per step.
pub(crate) struct Bf16Vectors {
    bits: Vec<u16>,
    cols: usize,
}

impl Bf16Vectors {
    /// `mean` and `pc` (of equal length), when every value of both is a
    /// BF16 value (as [`rounded`] makes them); else `None`.
    pub(crate) fn new(mean: &[f32], pc: &[f32]) -> Option<Bf16Vectors> {
        assert_eq!(mean.len(), pc.len(), "vectors of equal length");
        let exact = |v: &[f32]| v.iter().all(|x| x.to_bits() & 0xffff == 0);
        if !(exact(mean) && exact(pc)) {
            return None;
        }
        let cols = mean.len();
        let mut bits = vec![0u16; cols.div_ceil(STEP) * 2 * STEP];
        for (j, (&m, &c)) in mean.iter().zip(pc).enumerate() {
            let at = j / STEP * 2 * STEP + j % STEP;
            bits[at] = (m.to_bits() >> 16) as u16;
            bits[at + STEP] = (c.to_bits() >> 16) as u16;
        }
        Some(Bf16Vectors { bits, cols })
    }
}

/// True when this CPU runs [`rows`] (and `EMBSCOPE_CPU_MASK` hides
/// neither `avx512` nor `avx512bf16`).
pub(crate) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    return crate::cpu::has_avx512bf16();
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// The sums `[|r|², r·m, r·c]` of each whole BF16 row of `v`'s length in
/// `raw`, NaN for a row that is not finite, appended to `out`.
///
/// # Panics
/// When [`available`] is false.
pub(crate) fn rows(raw: &[u8], v: &Bf16Vectors, out: &mut Vec<[f32; 3]>) {
    assert!(available(), "the CPU runs vdpbf16ps");
    #[cfg(target_arch = "x86_64")]
    // SAFETY: checked just above.
    unsafe {
        rows_avx512bf16(raw, v, out)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (raw, &v.bits, v.cols, out);
}

/// [`rows`].
///
/// # Safety
/// The CPU must have AVX-512F, BW and BF16.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
unsafe fn rows_avx512bf16(raw: &[u8], v: &Bf16Vectors, out: &mut Vec<[f32; 3]>) {
    use std::arch::x86_64::*;
    let cols = v.cols;
    let row_bytes = 2 * cols;
    let (whole, tail) = (cols / STEP, cols % STEP);
    // The tail's values, as a mask of 16-bit lanes.
    let tail_mask: __mmask32 = (1u32 << tail).wrapping_sub(1);
    out.reserve(raw.len() / row_bytes.max(1));
    for row in raw.chunks_exact(row_bytes) {
        let [mut sq, mut dm, mut dc] = [_mm512_setzero_ps(); 3];
        for s in 0..whole + usize::from(tail > 0) {
            let at = s * STEP;
            let x = if s < whole {
                prefetch_ahead(row.as_ptr().wrapping_add(2 * at));
                // SAFETY: values `at..at + STEP` are in the row.
                unsafe { _mm512_loadu_si512(row.as_ptr().add(2 * at).cast()) }
            } else {
                // SAFETY: the masked lanes are the row's last values.
                unsafe { _mm512_maskz_loadu_epi16(tail_mask, row.as_ptr().add(2 * at).cast()) }
            };
            // Step `s` of the vectors: `m`'s STEP values, then `c`'s.
            let p = v.bits[2 * at..2 * (at + STEP)].as_ptr();
            // SAFETY: both loads are within the step's bits.
            let (m, c) = unsafe {
                (
                    _mm512_loadu_si512(p.cast()),
                    _mm512_loadu_si512(p.add(STEP).cast()),
                )
            };
            // SAFETY: these are plain 512-bit vectors; any bits are valid.
            let [x, m, c] =
                unsafe { std::mem::transmute::<[__m512i; 3], [__m512bh; 3]>([x, m, c]) };
            sq = _mm512_dpbf16_ps(sq, x, x);
            dm = _mm512_dpbf16_ps(dm, x, m);
            dc = _mm512_dpbf16_ps(dc, x, c);
        }
        let sums = [sq, dm, dc].map(|a| _mm512_reduce_add_ps(a));
        out.push(if sums[0].is_finite() {
            sums
        } else {
            [f32::NAN; 3]
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Dtype;
    use crate::rows::dots::dots;
    use crate::rows::row::Bf16;

    #[test]
    fn only_bf16_values_are_taken() {
        let (a, b) = ([1.0f32, 0.1], [0.5f32, -2.0]);
        assert!(Bf16Vectors::new(&a, &b).is_none());
        assert!(Bf16Vectors::new(&rounded(&a), &b).is_some());
        assert_eq!(&rounded(&a)[..], [1.0, f32::from_bits(0x3dcd_0000)]);
    }

    #[test]
    fn sums_are_the_f32_loops_sums_to_their_last_bits() {
        if !crate::cpu::coverage::runs("avx512bf16", available()) {
            return;
        }
        // 4096 columns (whole steps) and 100 (a tail of 4); rows of values
        // of different sizes, one with a NaN, one with an infinity, one of
        // zeros.
        for cols in [4096, 100] {
            let n = 9;
            let wave = |i: usize, a: f32| (i as f32 * a).sin() * (1.0 + (i % 7) as f32);
            let mut values: Vec<f32> = (0..n * cols).map(|i| wave(i, 0.77) * 1e-2).collect();
            values[3 * cols + 5] = f32::NAN;
            values[4 * cols + 1] = f32::INFINITY;
            values[5 * cols..6 * cols].fill(0.0);
            let bytes = Dtype::BF16.encode(&values);
            let m = rounded(
                &(0..cols)
                    .map(|j| wave(j, 1.31) * 3e-3 + 1e-3)
                    .collect::<Vec<_>>(),
            );
            let c = rounded(&(0..cols).map(|j| wave(j, 0.19) / 40.0).collect::<Vec<_>>());
            let mut got = Vec::new();
            rows(&bytes, &Bf16Vectors::new(&m, &c).unwrap(), &mut got);
            assert_eq!(got.len(), n);
            let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
            for (i, g) in got.iter().enumerate() {
                let r = Bf16(&bytes[i * 2 * cols..(i + 1) * 2 * cols]);
                let (sq, [dm, dc]) = dots::<true, 2>(r, [&m, &c]);
                if !sq.is_finite() {
                    assert!(g.iter().all(|x| x.is_nan()), "row {i}: {g:?}");
                    continue;
                }
                // Both sum exact products in f32, in other orders.
                assert!((g[0] - sq).abs() <= 1e-6 * sq, "row {i}: {} vs {sq}", g[0]);
                for (got, want, v) in [(g[1], dm, &m), (g[2], dc, &c)] {
                    let scale = sq.sqrt() * norm(v);
                    assert!(
                        (got - want).abs() <= 1e-6 * scale,
                        "row {i}: {got} vs {want}"
                    );
                }
            }
            assert_eq!(got[5], [0.0; 3]);
        }
    }
}
