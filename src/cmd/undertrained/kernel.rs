//! The per-row loops of `undertrained`'s passes: dot products and
//! `acc += y·r` over a row of f32 values or of BF16 bytes read in place
//! (decoded in registers a step at a time), with or without fused
//! multiply-adds, written so the compiler vectorises them; and prefetching
//! of the rows ahead.

/// `x * y + acc`, fused when `FMA` (only in builds for CPUs that have
/// it: elsewhere `mul_add` is a slow library call).
#[inline(always)]
pub(crate) fn madd<const FMA: bool>(x: f32, y: f32, acc: f32) -> f32 {
    if FMA { x.mul_add(y, acc) } else { x * y + acc }
}

/// f32 lanes per step of the row loops.
pub(crate) const L: usize = 32;

/// A row as the loops read it: f32 values, or BF16 bytes decoded a step
/// at a time in registers (no decoded copy of the row is written).
pub(crate) trait Row: Copy {
    /// Number of values.
    fn len(self) -> usize;
    /// Values `k..k + L` (`k + L <= len`).
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

/// A row of little-endian BF16 values.
#[derive(Clone, Copy)]
pub(super) struct Bf16<'a>(pub(super) &'a [u8]);

#[inline(always)]
fn bf16(lo: u8, hi: u8) -> f32 {
    f32::from_bits(u32::from(u16::from_le_bytes([lo, hi])) << 16)
}

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

/// `(r·r, r·a, r·b)` accumulated in [`L`] f32 lanes.
#[inline(always)]
pub(super) fn dot3<const FMA: bool>(r: impl Row, a: &[f32], b: &[f32]) -> [f32; 3] {
    let (mut s0, mut s1, mut s2) = ([0f32; L], [0f32; L], [0f32; L]);
    let whole = r.len() / L * L;
    for k in (0..whole).step_by(L) {
        let (rc, ac, bc) = (r.chunk(k), a.chunk(k), b.chunk(k));
        for i in 0..L {
            s0[i] = madd::<FMA>(rc[i], rc[i], s0[i]);
            s1[i] = madd::<FMA>(rc[i], ac[i], s1[i]);
            s2[i] = madd::<FMA>(rc[i], bc[i], s2[i]);
        }
    }
    let mut out = [s0.iter().sum(), s1.iter().sum(), s2.iter().sum()];
    for j in whole..r.len() {
        let x = r.at(j);
        out[0] += x * x;
        out[1] += x * a[j];
        out[2] += x * b[j];
    }
    out
}

/// `r·b` accumulated in [`L`] f32 lanes.
#[inline(always)]
pub(super) fn dot1<const FMA: bool>(r: impl Row, b: &[f32]) -> f32 {
    let mut s = [0f32; L];
    let whole = r.len() / L * L;
    for k in (0..whole).step_by(L) {
        let (rc, bc) = (r.chunk(k), b.chunk(k));
        for i in 0..L {
            s[i] = madd::<FMA>(rc[i], bc[i], s[i]);
        }
    }
    let mut out: f32 = s.iter().sum();
    for (j, y) in b.iter().enumerate().skip(whole) {
        out += r.at(j) * y;
    }
    out
}

/// `acc += y · r`.
#[inline(always)]
pub(super) fn axpy<const FMA: bool>(acc: &mut [f32], y: f32, r: impl Row) {
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
        let ones = vec![1.0; 37];
        let twos = vec![2.0; 37];
        let d = dot3::<false>(r.as_slice(), &ones, &twos);
        assert_eq!(d, dot3::<true>(r.as_slice(), &ones, &twos));
        assert_eq!(d, [(0..37).map(|i| (i * i) as f32).sum(), 666.0, 1332.0]);
        assert_eq!(dot1::<false>(r.as_slice(), &twos), 1332.0);
        let bytes: Vec<u8> = r
            .iter()
            .flat_map(|&x| half::bf16::from_f32(x).to_le_bytes())
            .collect();
        assert_eq!(dot3::<false>(Bf16(&bytes), &ones, &twos), d);
        let mut acc = vec![1.0; 37];
        axpy::<false>(&mut acc, 2.0, Bf16(&bytes));
        assert_eq!((acc[0], acc[36]), (1.0, 73.0));
    }
}
