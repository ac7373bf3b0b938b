//! The per-row loops of `undertrained`'s passes and of `check`'s value
//! pass: `r·r` with the dot products against up to two vectors (only the
//! vectors given cost anything), and `acc += y·r`, over a row of f32
//! values or of BF16 bytes read in place (decoded in registers a step at a
//! time, in order or as even and odd values), with or without fused
//! multiply-adds, written so the compiler vectorises them; and prefetching
//! of the rows ahead. Both layouts add each value into the same lane and
//! the lanes in the same order, so they give the same sums bit for bit,
//! and `check` and `undertrained` agree exactly.

/// `x * y + acc`, fused when `FMA` (only in builds for CPUs that have
/// it: elsewhere `mul_add` is a slow library call).
#[inline(always)]
pub(crate) fn madd<const FMA: bool>(x: f32, y: f32, acc: f32) -> f32 {
    if FMA { x.mul_add(y, acc) } else { x * y + acc }
}

/// f32 lanes per step of the row loops.
pub(crate) const L: usize = 32;

/// Half of [`L`]: the even values of a BF16 step, or the odd ones.
const HALF: usize = L / 2;

/// A row as the loops read it: f32 values, or BF16 bytes decoded a step
/// at a time in registers (no decoded copy of the row is written).
pub(crate) trait Row: Copy {
    /// Whether [`chunk`](Row::chunk) gives a step's values in the BF16
    /// lane order of [`Dotted`] (even values, then odd ones) instead of in
    /// order.
    const INTERLEAVED: bool = false;
    /// Number of values.
    fn len(self) -> usize;
    /// Values `k..k + L` (`k + L <= len`), in order or, when
    /// [`INTERLEAVED`](Row::INTERLEAVED), in the BF16 lane order.
    fn chunk(self, k: usize) -> [f32; L];
    /// Value `j`.
    fn at(self, j: usize) -> f32;
}

impl Row for &[f32] {
    #[inline(always)]
    fn len(self) -> usize {
        <[f32]>::len(self)
    }
    #[inline(always)]
    fn chunk(self, k: usize) -> [f32; L] {
        self[k..k + L].try_into().expect("L values")
    }
    #[inline(always)]
    fn at(self, j: usize) -> f32 {
        self[j]
    }
}

#[inline(always)]
fn bf16(lo: u8, hi: u8) -> f32 {
    f32::from_bits(u32::from(u16::from_le_bytes([lo, hi])) << 16)
}

/// A row of little-endian BF16 values, each step's values in order,
/// widened 16 at a time from 32-byte loads. `undertrained`'s passes read
/// rows this way: [`Bf16Lanes`] decodes with fewer instructions, but its
/// 64-byte loads each straddle two cache lines when the tensor's data does
/// not start on a 64-byte boundary (as on the benchmark's checkpoint), and
/// the head pass measured slower with it there.
#[derive(Clone, Copy)]
pub(super) struct Bf16<'a>(pub(super) &'a [u8]);

impl Row for Bf16<'_> {
    #[inline(always)]
    fn len(self) -> usize {
        self.0.len() / 2
    }
    #[inline(always)]
    fn chunk(self, k: usize) -> [f32; L] {
        let bytes: &[u8; 2 * L] = self.0[2 * k..2 * (k + L)].try_into().expect("2L bytes");
        std::array::from_fn(|i| bf16(bytes[2 * i], bytes[2 * i + 1]))
    }
    #[inline(always)]
    fn at(self, j: usize) -> f32 {
        bf16(self.0[2 * j], self.0[2 * j + 1])
    }
}

/// A row of little-endian BF16 values read as 32-bit words: a word's high
/// half is one value's f32 bit pattern once the low half is masked off,
/// and its low half shifted up is the other's. So a step of [`L`] values
/// comes out as the even values, then the odd ones (a shift and a mask
/// per 16 values, no shuffles). `check`'s value pass reads rows this way.
#[derive(Clone, Copy)]
pub(crate) struct Bf16Lanes<'a>(pub(crate) &'a [u8]);

impl Row for Bf16Lanes<'_> {
    const INTERLEAVED: bool = true;
    #[inline(always)]
    fn len(self) -> usize {
        self.0.len() / 2
    }
    #[inline(always)]
    fn chunk(self, k: usize) -> [f32; L] {
        let c: &[u8; 2 * L] = self.0[2 * k..2 * (k + L)].try_into().expect("2L bytes");
        let (words, _) = c.as_chunks::<4>();
        let w: [u32; HALF] = std::array::from_fn(|i| u32::from_le_bytes(words[i]));
        let mut x = [0f32; L];
        for i in 0..HALF {
            x[i] = f32::from_bits(w[i] << 16);
            x[HALF + i] = f32::from_bits(w[i] & 0xFFFF_0000);
        }
        x
    }
    #[inline(always)]
    fn at(self, j: usize) -> f32 {
        bf16(self.0[2 * j], self.0[2 * j + 1])
    }
}

/// A vector the rows are dotted with, in the layouts the loops read.
#[derive(Debug)]
pub(crate) struct Dotted {
    /// The values in order.
    plain: Vec<f32>,
    /// Each step of [`L`] values as [`Bf16Lanes`] gives a row's: the even
    /// values, then the odd ones.
    interleaved: Vec<f32>,
}

impl Dotted {
    /// The vector `v`, of one value per column.
    pub(crate) fn new(v: Vec<f32>) -> Self {
        let mut interleaved = v.clone();
        for (step, out) in v.chunks_exact(L).zip(interleaved.chunks_exact_mut(L)) {
            for l in 0..HALF {
                out[l] = step[2 * l];
                out[HALF + l] = step[2 * l + 1];
            }
        }
        Dotted {
            plain: v,
            interleaved,
        }
    }

    /// The values in order.
    pub(crate) fn values(&self) -> &[f32] {
        &self.plain
    }
}

/// The lanes added in value order (`interleaved`: as [`Bf16Lanes`] holds
/// them), so both row layouts give the same sums.
#[inline(always)]
fn lane_total(lanes: &[f32; L], interleaved: bool) -> f32 {
    let ordered: [f32; L] = std::array::from_fn(|j| match interleaved {
        true if j % 2 == 1 => lanes[HALF + j / 2],
        true => lanes[j / 2],
        false => lanes[j],
    });
    ordered.iter().sum()
}

/// `r·r` and `r·v` for each of the `N` vectors (at most 2), accumulated
/// in [`L`] f32 lanes (value `j` of each step in lane `j`, whatever the
/// row layout) and the lanes then added in value order; values past the
/// last whole step are added one by one. Each vector has `r.len()` values.
#[inline(always)]
pub(crate) fn dots<const FMA: bool, const N: usize, R: Row>(
    r: R,
    vs: [&Dotted; N],
) -> (f32, [f32; N]) {
    const { assert!(N <= 2, "at most two vectors") };
    let step = |n: usize, k: usize| -> &[f32; L] {
        match vs.get(n) {
            Some(v) => {
                let lanes = if R::INTERLEAVED {
                    &v.interleaved
                } else {
                    &v.plain
                };
                lanes[k..k + L].try_into().expect("L values")
            }
            None => &[0.0; L],
        }
    };
    // Named arrays, not one array of `N`: the compiler keeps these in
    // registers.
    let (mut sq, mut a0, mut a1) = ([0f32; L], [0f32; L], [0f32; L]);
    let whole = r.len() / L * L;
    for k in (0..whole).step_by(L) {
        let (x, v0, v1) = (r.chunk(k), step(0, k), step(1, k));
        for l in 0..L {
            sq[l] = madd::<FMA>(x[l], x[l], sq[l]);
            if N > 0 {
                a0[l] = madd::<FMA>(x[l], v0[l], a0[l]);
            }
            if N > 1 {
                a1[l] = madd::<FMA>(x[l], v1[l], a1[l]);
            }
        }
    }
    let mut sq_total = lane_total(&sq, R::INTERLEAVED);
    let mut totals: [f32; N] =
        std::array::from_fn(|n| lane_total(if n == 0 { &a0 } else { &a1 }, R::INTERLEAVED));
    for j in whole..r.len() {
        let x = r.at(j);
        sq_total += x * x;
        for n in 0..N {
            totals[n] += x * vs[n].plain[j];
        }
    }
    (sq_total, totals)
}

/// `acc += y · r`, for a row whose values come in order.
#[inline(always)]
pub(super) fn axpy<const FMA: bool, R: Row>(acc: &mut [f32], y: f32, r: R) {
    const { assert!(!R::INTERLEAVED, "axpy needs the values in order") };
    let whole = r.len() / L * L;
    for k in (0..whole).step_by(L) {
        let rc = r.chunk(k);
        let ac: &mut [f32; L] = (&mut acc[k..k + L]).try_into().expect("L values");
        for i in 0..L {
            ac[i] = madd::<FMA>(y, rc[i], ac[i]);
        }
    }
    for (j, a) in acc.iter_mut().enumerate().skip(whole) {
        *a = madd::<FMA>(y, r.at(j), *a);
    }
}

/// Rows ahead whose bytes are asked of memory before they are needed.
pub(crate) const PREFETCH_ROWS: usize = 2;

/// Asks for `bytes` to be brought into cache, one request per 64-byte line.
#[inline(always)]
pub(crate) fn prefetch(bytes: Option<&[u8]>) {
    #[cfg(target_arch = "x86_64")]
    if let Some(bytes) = bytes {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        for line in bytes.chunks(64) {
            // SAFETY: prefetching is a hint; any address is allowed.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast()) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_cover_the_tail_and_both_row_types() {
        let r: Vec<f32> = (0..37).map(|i| i as f32).collect();
        let (ones, twos) = (Dotted::new(vec![1.0; 37]), Dotted::new(vec![2.0; 37]));
        let d = dots::<false, 2, _>(r.as_slice(), [&ones, &twos]);
        assert_eq!(d, dots::<true, 2, _>(r.as_slice(), [&ones, &twos]));
        assert_eq!(d, ((0..37).map(|i| (i * i) as f32).sum(), [666.0, 1332.0]));
        assert_eq!(dots::<false, 1, _>(r.as_slice(), [&twos]), (d.0, [1332.0]));
        assert_eq!(dots::<false, 0, _>(r.as_slice(), []), (d.0, []));
        let bytes: Vec<u8> = r
            .iter()
            .flat_map(|&x| half::bf16::from_f32(x).to_le_bytes())
            .collect();
        assert_eq!(dots::<false, 2, _>(Bf16(&bytes), [&ones, &twos]), d);
        assert_eq!(dots::<false, 2, _>(Bf16Lanes(&bytes), [&ones, &twos]), d);
        let mut acc = vec![1.0; 37];
        axpy::<false, _>(&mut acc, 2.0, Bf16(&bytes));
        assert_eq!((acc[0], acc[36]), (1.0, 73.0));
    }

    #[test]
    fn both_bf16_layouts_give_the_same_sums_bit_for_bit() {
        // Values whose sums round differently in another order: 3 whole
        // steps and a tail of 4.
        let n = 100;
        let wave = |i: usize, a: f32| ((i as f32 * a).sin() * 3.7).powi(3);
        let bytes: Vec<u8> = (0..n)
            .flat_map(|i| half::bf16::from_f32(wave(i, 0.77)).to_le_bytes())
            .collect();
        let a = Dotted::new((0..n).map(|i| wave(i, 1.31)).collect());
        let b = Dotted::new((0..n).map(|i| wave(i, 0.19) + 1e-3).collect());
        for fma in [false, true] {
            let (plain, lanes) = if fma {
                (
                    dots::<true, 2, _>(Bf16(&bytes), [&a, &b]),
                    dots::<true, 2, _>(Bf16Lanes(&bytes), [&a, &b]),
                )
            } else {
                (
                    dots::<false, 2, _>(Bf16(&bytes), [&a, &b]),
                    dots::<false, 2, _>(Bf16Lanes(&bytes), [&a, &b]),
                )
            };
            assert_eq!(plain.0.to_bits(), lanes.0.to_bits());
            assert_eq!(plain.1.map(f32::to_bits), lanes.1.map(f32::to_bits));
            let want: f64 = (0..n)
                .map(|i| f64::from(Bf16(&bytes).at(i)) * f64::from(a.values()[i]))
                .sum();
            assert!((f64::from(plain.1[0]) - want).abs() < 1e-4 * want.abs().max(1.0));
        }
    }
}
