//! Where each merge's strings lie in a tokenizer.json, packed eight bytes
//! a merge, recorded while the scan checks the merges.

use std::ops::Range;

use super::strings::{Merge, Part};

/// Where each merge's strings lie in a tokenizer.json, recorded while
/// [`merges`] checks them, so that a later reader can filter the merges
/// without scanning them again (`undertrained`'s reachability test): a
/// [`MergePlace`] of 8 bytes per merge. A merge that does not fit one
/// (a file of 4 GiB or more, a string of 4 KiB or more, or 64 bytes or
/// more between a pair's strings) leaves the places incomplete.
#[derive(Debug, Default)]
pub(crate) struct MergePlaces {
    /// One place a merge, in order.
    pub merges: Vec<MergePlace>,
    /// Whether the merges are pairs of strings (the last one recorded was).
    pub pairs: bool,
    /// A merge did not fit its place.
    overflow: bool,
}

/// Where a merge's strings lie, quotes included, packed in 64 bits (16
/// bytes, a start and an end for each string, took a page fault per 256
/// merges more while the tokenizer loaded): from bit 0, the first
/// string's start (32 bits), its length and the second's (12 bits each,
/// 0 for a joined merge), the bytes between them (6 bits), and whether
/// each has escapes (a bit each).
#[derive(Debug, Clone, Copy)]
pub(crate) struct MergePlace(u64);

impl MergePlace {
    /// The place of the strings at `a` and `b` (none for a joined merge)
    /// with escapes as said; `None` when they do not fit.
    pub(super) fn new(
        (a, a_esc): (Range<usize>, bool),
        b: Option<(Range<usize>, bool)>,
    ) -> Option<Self> {
        let fits = |x: usize, bits: u32| (x < 1 << bits).then_some(x as u64);
        let (len_b, gap, b_esc) = match b {
            Some((b, esc)) => (b.len(), b.start.checked_sub(a.end)?, esc),
            None => (0, 0, false),
        };
        Some(MergePlace(
            fits(a.start, 32)?
                | fits(a.len(), 12)? << 32
                | fits(len_b, 12)? << 44
                | fits(gap, 6)? << 56
                | u64::from(a_esc) << 62
                | u64::from(b_esc) << 63,
        ))
    }

    /// Where its first string lies, and whether it has escapes.
    pub(crate) fn first(self) -> (Range<usize>, bool) {
        let start = (self.0 & 0xFFFF_FFFF) as usize;
        let len = (self.0 >> 32 & 0xFFF) as usize;
        (start..start + len, self.0 >> 62 & 1 == 1)
    }

    /// Where its second string lies, and whether it has escapes (`None`:
    /// a joined merge).
    pub(crate) fn second(self) -> Option<(Range<usize>, bool)> {
        let len = (self.0 >> 44 & 0xFFF) as usize;
        let start = self.first().0.end + (self.0 >> 56 & 0x3F) as usize;
        (len > 0).then_some((start..start + len, self.0 >> 63 == 1))
    }
}

impl MergePlaces {
    /// Places with room for the merges of a file of `len` bytes (a merge
    /// takes 6 bytes at the least, `"a b",`): the vector never grows by
    /// copying, and the pages past what the merges use are never touched.
    pub(crate) fn for_file(len: usize) -> MergePlaces {
        MergePlaces {
            merges: Vec::with_capacity(len / 6),
            ..MergePlaces::default()
        }
    }

    /// Records the places of `merge`'s strings in `file`.
    pub(crate) fn record(&mut self, file: &[u8], merge: Merge) {
        let at = |part: Part| (part.range_in(file), part.escaped());
        let place = match merge {
            Merge::Pair(a, b) => {
                self.pairs = true;
                MergePlace::new(at(a), Some(at(b)))
            }
            Merge::Joined(s) => {
                self.pairs = false;
                MergePlace::new(at(s), None)
            }
        };
        match place {
            Some(p) => self.merges.push(p),
            None => self.overflow = true,
        }
    }

    /// The places, unless one did not fit.
    pub(crate) fn complete(self) -> Option<MergePlaces> {
        (!self.overflow).then_some(self)
    }
}
