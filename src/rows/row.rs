//! A row as the loops of this module read it, in place from the mapped
//! bytes: f32 values, little-endian F32 bytes, or BF16 bytes widened a
//! step of [`L`] values at a time in registers (no decoded copy of a row
//! is written); and prefetching of the bytes ahead.

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
    /// Asks for the stored bytes of values `k..k + L`, a fixed distance
    /// further on, to be brought into cache (see `cpu::prefetch_ahead`):
    /// rows read in place from a mapped matrix do; values already in
    /// memory (converted rows) need not.
    #[inline(always)]
    fn prefetch_ahead(self, _k: usize) {}
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

/// A row of little-endian BF16 values, widened 16 at a time from 32-byte
/// loads. (Reading 32-bit words and splitting each into its two values
/// with a shift and a mask takes fewer instructions, but a tensor seldom
/// starts on a cache line, and then each 64-byte load straddles two
/// lines, which costs more than the instructions saved.)
#[derive(Clone, Copy)]
pub(crate) struct Bf16<'a>(pub(crate) &'a [u8]);

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
    #[inline(always)]
    fn prefetch_ahead(self, k: usize) {
        // A step's 64 bytes: one line's worth.
        crate::cpu::prefetch_ahead(self.0.as_ptr().wrapping_add(2 * k));
    }
}

/// F32 values read in place from little-endian bytes.
#[derive(Clone, Copy)]
pub(crate) struct F32Bytes<'a>(pub(crate) &'a [u8]);

impl Row for F32Bytes<'_> {
    #[inline(always)]
    fn len(self) -> usize {
        self.0.len() / 4
    }
    #[inline(always)]
    fn chunk(self, k: usize) -> [f32; L] {
        let b: &[u8; 4 * L] = self.0[4 * k..4 * (k + L)].try_into().expect("whole step");
        std::array::from_fn(|l| {
            f32::from_le_bytes([b[4 * l], b[4 * l + 1], b[4 * l + 2], b[4 * l + 3]])
        })
    }
    #[inline(always)]
    fn at(self, j: usize) -> f32 {
        let b = &self.0[4 * j..4 * j + 4];
        f32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
    #[inline(always)]
    fn prefetch_ahead(self, k: usize) {
        // A step's 128 bytes: two lines.
        let p = self.0.as_ptr().wrapping_add(4 * k);
        crate::cpu::prefetch_ahead(p);
        crate::cpu::prefetch_ahead(p.wrapping_add(64));
    }
}

/// Asks for `bytes` to be brought into cache, one request per 64-byte line
/// (for a row read out of order, such as the component sample's next one;
/// rows read in order ask as they go, see [`Row::prefetch_ahead`]).
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
