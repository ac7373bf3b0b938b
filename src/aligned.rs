//! Vectors whose first value starts a 64-byte cache line.
//!
//! `undertrained`'s and `check`'s row loops (see
//! `cmd::undertrained::kernel`) read the vectors they dot the rows with
//! (the reference mean, the principal component) at every step, 64 bytes
//! at a time, and the component's power iteration adds rows into one. As
//! the allocator gives them (16-byte aligned; 16 bytes past a page for
//! large blocks), each such load spans two cache lines, and on a Zen 4 the
//! loop over rows in cache against two vectors then takes about half as
//! long again as with the vectors on whole lines. The search kernels'
//! queries are not aligned: their loops are bound by the dot-product
//! instructions, not by these loads.

use std::ops::{Deref, DerefMut};

/// The alignment, in bytes.
const LINE: usize = 64;

/// A fixed-length vector of `T` starting on a 64-byte boundary.
#[derive(Debug)]
pub(crate) struct Aligned<T> {
    buf: Vec<T>,
    start: usize,
    len: usize,
}

impl<T: Copy + Default> Aligned<T> {
    /// `len` default values (zeros).
    pub(crate) fn zeros(len: usize) -> Aligned<T> {
        let buf = vec![T::default(); len + LINE / std::mem::size_of::<T>().max(1)];
        // `align_offset` may answer `usize::MAX` ("not possible"); then the
        // values start unaligned, which costs speed only.
        let start = match buf.as_ptr().align_offset(LINE) {
            n if n <= buf.len() - len => n,
            _ => 0,
        };
        Aligned { buf, start, len }
    }

    /// A copy of `values`.
    pub(crate) fn copy_of(values: &[T]) -> Aligned<T> {
        let mut a = Aligned::zeros(values.len());
        a.copy_from_slice(values);
        a
    }
}

impl<T: Copy + Default> FromIterator<T> for Aligned<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        Aligned::copy_of(&iter.into_iter().collect::<Vec<T>>())
    }
}

impl<T> Deref for Aligned<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.buf[self.start..self.start + self.len]
    }
}

impl<T> DerefMut for Aligned<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.buf[self.start..self.start + self.len]
    }
}

impl<'a, T> IntoIterator for &'a Aligned<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_start_a_cache_line() {
        for len in [0, 1, 15, 16, 4096, 100_003] {
            let a: Aligned<u16> = (0..len).map(|i| i as u16).collect();
            assert_eq!(a.len(), len);
            assert!(a.iter().enumerate().all(|(i, &x)| x == i as u16));
            assert_eq!(a.as_ptr() as usize % 64, 0, "len {len}");
            let f = Aligned::<f32>::copy_of(&[1.0, 2.0, 3.0]);
            assert_eq!(
                (&f[..], f.as_ptr() as usize % 64),
                (&[1.0, 2.0, 3.0][..], 0)
            );
        }
    }
}
