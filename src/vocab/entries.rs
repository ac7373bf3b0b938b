//! The raw entries of a vocabulary (model vocab, then added tokens), with
//! every token string in one buffer: a 128k vocabulary is then one
//! allocation instead of 128k, loads and is dropped faster, and a walk
//! over the entries reads memory in order.

/// One entry as stored: where its string ends in the buffer (it starts
/// where the previous entry's ends): 16 bytes an entry, not 24 with its
/// start too, which for 128k entries is a megabyte less to fill (a page
/// fault per 4 KiB of it) and to walk.
struct Slot {
    end: usize,
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
        self.text.push_str(token);
        self.slots.push(Slot {
            end: self.text.len(),
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
        let s = self.slots.get(index)?;
        let start = index.checked_sub(1).map_or(0, |i| self.slots[i].end);
        Some(Entry {
            // Slots only ever cover whole pushed strings.
            token: &self.text[start..s.end],
            id: s.id,
            added: s.added,
        })
    }

    /// Every entry, in push order.
    #[inline]
    pub(crate) fn iter(
        &self,
    ) -> impl DoubleEndedIterator<Item = Entry<'_>> + ExactSizeIterator + Clone {
        (0..self.slots.len()).map(|i| self.get(i).expect("an index below the length"))
    }
}

/// Entries read from a file as its bytes, checked for UTF-8 once, as a
/// whole, when [`ReadEntries::finish`] makes them [`Entries`]: faster than
/// a check per token, and than the standard library's check of text with
/// a multi-byte character in most tokens (byte-level BPE's `Ġ`).
pub(crate) struct ReadEntries {
    text: Vec<u8>,
    slots: Vec<Slot>,
    /// A token starts with a UTF-8 continuation byte.
    split: bool,
}

impl ReadEntries {
    /// Room for `n` entries whose strings take about `bytes` bytes in all
    /// (pages of it never written are never touched).
    pub(crate) fn with_capacity(n: usize, bytes: usize) -> Self {
        ReadEntries {
            text: Vec::with_capacity(bytes),
            slots: Vec::with_capacity(n),
            split: false,
        }
    }

    /// Appends a model-vocab entry whose token is `token`, as yet unchecked.
    pub(crate) fn push(&mut self, token: &[u8], id: u32) {
        // Valid joined text whose every token starts a character has
        // every token valid on its own.
        self.split |= token.first().is_some_and(|&c| c & 0xC0 == 0x80);
        self.text.extend_from_slice(token);
        self.slots.push(Slot {
            end: self.text.len(),
            id,
            added: false,
        });
    }

    /// The entries pushed so far, in push order: each token's bytes (not
    /// yet checked to be UTF-8) and its id.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], u32)> {
        let starts = std::iter::once(0).chain(self.slots.iter().map(|s| s.end));
        self.slots
            .iter()
            .zip(starts)
            .map(|(s, start)| (&self.text[start..s.end], s.id))
    }

    /// The entries, when every token is UTF-8.
    pub(crate) fn finish(self) -> Option<Entries> {
        if self.split {
            return None;
        }
        simdutf8::basic::from_utf8(&self.text).ok()?;
        // SAFETY: `from_utf8` just found the bytes to be UTF-8.
        let text = unsafe { String::from_utf8_unchecked(self.text) };
        Some(Entries {
            text,
            slots: self.slots,
        })
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

    #[test]
    fn read_entries_keep_only_whole_utf8_tokens() {
        let read = |tokens: &[&[u8]]| {
            let mut r = ReadEntries::with_capacity(0, 0);
            for (id, t) in tokens.iter().enumerate() {
                r.push(t, id as u32);
            }
            r.finish()
                .map(|e| e.iter().map(|x| x.token.to_string()).collect::<Vec<_>>())
        };
        let ok: &[&[u8]] = &["Ġking".as_bytes(), b"", "▁é".as_bytes()];
        assert_eq!(
            read(ok),
            Some(vec!["Ġking".into(), String::new(), "▁é".into()])
        );
        // `Ġ` (C4 A0) cut in two: valid joined, not as tokens.
        assert_eq!(read(&[b"a\xC4", b"\xA0b"]), None);
        assert_eq!(read(&[b"ok", b"\xFF"]), None);
    }
}
