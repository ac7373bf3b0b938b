//! A look at a vocabulary's id → token table while tokenizer.json is still
//! being read: once the scan has read the model vocab (a fifth of the way
//! into Llama 3's file, before its merges), a caller can start on what the
//! table holds so far and check its guess against the loaded [`Vocab`]
//! (see [`Vocab::load_previewing`]).

use std::collections::BTreeMap;

#[cfg(doc)]
use super::Vocab;
use super::entries::ReadEntries;

/// The id → token table as far as tokenizer.json has been read when the
/// scan has read its model vocab: the model entries, and the added tokens
/// if the file wrote them before the model (Hugging Face writes them
/// first; ones written after are missing here).
pub struct Preview<'a> {
    pub(super) model: &'a ReadEntries,
    /// The added tokens read so far: id and content, in file order.
    pub(super) added: &'a [(u32, &'a str)],
}

impl Preview<'_> {
    /// Of the ids below `rows`, those whose token `keep` accepts (as
    /// bytes, not yet checked to be UTF-8) and those with no token, both
    /// ascending: as [`Vocab::token`] will have them if the rest of the
    /// file adds no token (an added token wins over a model entry with the
    /// same id, a later added token over an earlier one, the first model
    /// entry over a later one). Keeps a bit per id, not a table of tokens:
    /// fresh memory costs a page fault per 4 KiB, and a table of 128k
    /// tokens took 7 ms to fill.
    pub fn ids(&self, rows: usize, keep: impl Fn(&[u8]) -> bool) -> (Vec<u32>, Vec<u32>) {
        let added: BTreeMap<u32, &[u8]> = self
            .added
            .iter()
            .filter(|&&(id, _)| (id as usize) < rows)
            .map(|&(id, content)| (id, content.as_bytes()))
            .collect();
        let mut seen = vec![0u64; rows.div_ceil(64)];
        let mut kept = Vec::new();
        for (token, id) in self.model.iter() {
            let (word, bit) = (id as usize / 64, 1u64 << (id % 64));
            if (id as usize) < rows && seen[word] & bit == 0 {
                seen[word] |= bit;
                if keep(token) && !added.contains_key(&id) {
                    kept.push(id);
                }
            }
        }
        for (&id, &token) in &added {
            seen[id as usize / 64] |= 1 << (id % 64);
            if keep(token) {
                kept.push(id);
            }
        }
        kept.sort_unstable();
        let missing = (0..rows as u32)
            .filter(|&id| seen[id as usize / 64] & (1 << (id % 64)) == 0)
            .collect();
        (kept, missing)
    }
}
