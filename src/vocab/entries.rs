//! The raw entries of a vocabulary (model vocab, then added tokens), with
//! every token string in one buffer: a 128k vocabulary is then one
//! allocation instead of 128k, loads and is dropped faster, and a walk
//! over the entries reads memory in order.

/// One entry as stored: where its string lies in the buffer.
struct Slot {
    start: usize,
    len: usize,
    id: u32,
    added: bool,
}

/// An entry: a model-vocab or added token and its id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry<'a> {
    /// The token string as stored.
    pub token: &'a str,
    /// The id it is stored under.
    pub id: u32,
    /// Whether it is an added token (not a model-vocab entry).
    pub added: bool,
}

/// The entries in the order they were pushed.
#[derive(Default)]
pub(crate) struct Entries {
    text: String,
    slots: Vec<Slot>,
}

impl Entries {
    /// Room for `n` entries whose strings take about `bytes` bytes in all.
    pub(crate) fn with_capacity(n: usize, bytes: usize) -> Self {
        Entries {
            text: String::with_capacity(bytes),
            slots: Vec::with_capacity(n),
        }
    }

    /// Appends an entry.
    pub(crate) fn push(&mut self, token: &str, id: u32, added: bool) {
        let start = self.text.len();
        self.text.push_str(token);
        self.slots.push(Slot {
            start,
            len: token.len(),
            id,
            added,
        });
    }

    /// The number of entries.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// The entry at `index` (in push order).
    #[inline]
    pub(crate) fn get(&self, index: usize) -> Option<Entry<'_>> {
        self.slots.get(index).map(|s| self.entry(s))
    }

    /// Every entry, in push order.
    #[inline]
    pub(crate) fn iter(
        &self,
    ) -> impl DoubleEndedIterator<Item = Entry<'_>> + ExactSizeIterator + Clone {
        self.slots.iter().map(|s| self.entry(s))
    }

    #[inline]
    fn entry(&self, s: &Slot) -> Entry<'_> {
        Entry {
            // Slots only ever cover whole pushed strings.
            token: &self.text[s.start..s.start + s.len],
            id: s.id,
            added: s.added,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_back_as_pushed() {
        let mut e = Entries::with_capacity(0, 0);
        for (token, id, added) in [("Ġking", 7, false), ("", 3, false), ("▁é", 9, true)] {
            e.push(token, id, added);
        }
        assert_eq!(e.len(), 3);
        let got: Vec<(&str, u32, bool)> = e.iter().map(|x| (x.token, x.id, x.added)).collect();
        assert_eq!(got, [("Ġking", 7, false), ("", 3, false), ("▁é", 9, true)]);
        assert_eq!(e.get(2).map(|x| x.token), Some("▁é"));
        assert_eq!(e.get(3), None);
        assert_eq!(e.iter().next_back().map(|x| x.id), Some(9));
    }
}
