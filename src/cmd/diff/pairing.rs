//! Which row of the fine-tune each base row is compared with: the row of
//! the same token text when both models have a tokenizer (a token the
//! fine-tune renumbered keeps its row), else the row of the same id. A
//! tuned row no base row pairs with is an added row; a base row no tuned
//! row pairs with, a removed one. Tokens are matched by text once
//! ([`Matched`]) for the rows and the token diff alike.

use foldhash::{HashMap, HashMapExt};

use crate::vocab::Vocab;

/// No row.
pub(crate) const NONE: u32 = u32::MAX;

/// Each side's tokens found in the other by their text.
#[derive(Debug)]
pub(crate) struct Matched {
    /// For each id of TUNED's tokenizer, the BASE id of its text
    /// ([`NONE`]: no token there, or BASE has no such text).
    pub base_of: Vec<u32>,
    /// For each id of BASE's tokenizer, the TUNED id of its text.
    pub tuned_of: Vec<u32>,
}

impl Matched {
    /// Matches the tokens of `base` and `tuned`.
    pub(crate) fn new(base: &Vocab, tuned: &Vocab) -> Matched {
        Matched {
            base_of: found_in(tuned, base),
            tuned_of: found_in(base, tuned),
        }
    }
}

/// For each id of `from`, the id of its token's text in `to` (the same id
/// when it holds the same text, else the lowest id holding it). Most
/// tokens keep their id; the texts of the others are looked up in one
/// walk over `to`'s entries, without a map of its whole vocabulary.
fn found_in(from: &Vocab, to: &Vocab) -> Vec<u32> {
    let mut out = vec![NONE; from.size()];
    let mut wanted: HashMap<&str, Vec<u32>> = HashMap::new();
    for (id, slot) in out.iter_mut().enumerate() {
        let Some(text) = from.token(id as u32) else {
            continue;
        };
        match to.token(id as u32) {
            Some(same) if same == text => *slot = id as u32,
            _ => wanted.entry(text).or_default().push(id as u32),
        }
    }
    if wanted.is_empty() {
        return out;
    }
    for found in to.ids_where(|_, text| wanted.contains_key(text)) {
        let text = to.token(found).expect("a token where one was found");
        for &id in &wanted[text] {
            if out[id as usize] == NONE {
                out[id as usize] = found;
            }
        }
    }
    out
}

/// How the rows of one matrix pair up.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Pairing {
    /// For each base row, the tuned row it is compared with ([`NONE`]: it
    /// was removed).
    pub tuned_of: Vec<u32>,
    /// Tuned rows that no base row pairs with, ascending.
    pub added: Vec<u32>,
    /// Base rows that no tuned row pairs with, ascending.
    pub removed: Vec<u32>,
    /// Rows paired with a row of another id (renumbered tokens).
    pub moved: usize,
    /// Rows paired by id although both models have a tokenizer: rows no
    /// token reaches on either side, or whose tokens both sides lost.
    pub by_id: usize,
}

impl Pairing {
    /// Row `i` of each side paired with row `i` of the other.
    pub(crate) fn by_id(base_rows: usize, tuned_rows: usize) -> Pairing {
        let tuned_of = (0..base_rows as u32)
            .map(|b| if (b as usize) < tuned_rows { b } else { NONE })
            .collect();
        Pairing {
            tuned_of,
            added: (base_rows.min(tuned_rows) as u32..tuned_rows as u32).collect(),
            removed: (tuned_rows.min(base_rows) as u32..base_rows as u32).collect(),
            moved: 0,
            by_id: 0,
        }
    }

    /// Each tuned row paired with the base row of its token's text (as
    /// `matched` has it); then the rows still unpaired by id, where the
    /// base row of that id is unpaired too (rows no token reaches, a
    /// reused slot).
    pub(crate) fn by_token(matched: &Matched, base_rows: usize, tuned_rows: usize) -> Pairing {
        let mut base_of = vec![NONE; tuned_rows];
        let mut used = vec![false; base_rows];
        let mut moved = 0;
        for (t, slot) in base_of.iter_mut().enumerate() {
            let b = matched.base_of.get(t).copied().unwrap_or(NONE);
            if (b as usize) < base_rows && !used[b as usize] {
                *slot = b;
                used[b as usize] = true;
                moved += usize::from(b as usize != t);
            }
        }
        let mut by_id = 0;
        for (t, slot) in base_of.iter_mut().enumerate() {
            if *slot == NONE && t < base_rows && !used[t] {
                *slot = t as u32;
                used[t] = true;
                by_id += 1;
            }
        }
        let mut tuned_of = vec![NONE; base_rows];
        let mut added = Vec::new();
        for (t, &b) in base_of.iter().enumerate() {
            match b {
                NONE => added.push(t as u32),
                b => tuned_of[b as usize] = t as u32,
            }
        }
        let removed = (0..base_rows as u32)
            .filter(|&b| !used[b as usize])
            .collect();
        Pairing {
            tuned_of,
            added,
            removed,
            moved,
            by_id,
        }
    }

    /// Rows compared, pair by pair.
    pub(crate) fn compared(&self) -> usize {
        self.tuned_of.len() - self.removed.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A WordLevel vocabulary of `tokens` (id = place; `None` leaves a gap).
    fn vocab(tokens: &[Option<&str>]) -> Vocab {
        let dir = tempfile::tempdir().unwrap();
        let entries: serde_json::Map<String, serde_json::Value> = tokens
            .iter()
            .enumerate()
            .filter_map(|(i, t)| Some((t.as_ref()?.to_string(), i.into())))
            .collect();
        let json = serde_json::json!({
            "added_tokens": [],
            "model": {"type": "WordLevel", "vocab": entries, "unk_token": "a"},
        });
        std::fs::write(dir.path().join("tokenizer.json"), json.to_string()).unwrap();
        Vocab::load(dir.path(), None)
            .unwrap()
            .expect("a vocabulary")
    }

    #[test]
    fn tokens_pair_by_text_and_the_rest_by_id() {
        // BASE: a b c d, and two rows no token reaches. TUNED: b and a
        // swapped, c gone and its slot taken by x, d kept, one row no
        // token reaches, then y appended.
        let base = vocab(&[Some("a"), Some("b"), Some("c"), Some("d")]);
        let tuned = vocab(&[Some("b"), Some("a"), Some("x"), Some("d"), None, Some("y")]);
        let m = Matched::new(&base, &tuned);
        assert_eq!(m.base_of, [1, 0, NONE, 3, NONE, NONE]);
        assert_eq!(m.tuned_of, [1, 0, NONE, 3]);
        let p = Pairing::by_token(&m, 6, 7);
        // x takes c's row by id, and y the row no token reached (as a
        // fine-tune that gives padding rows tokens does): rows of the base
        // are compared; only the row past them is added.
        assert_eq!(p.tuned_of, [1, 0, 2, 3, 4, 5]);
        assert_eq!((p.moved, p.by_id), (2, 3));
        assert_eq!((p.added, p.removed), (vec![6], vec![]));
        // Fewer tuned rows: the base rows past them are removed.
        let p = Pairing::by_token(&m, 6, 3);
        assert_eq!(p.tuned_of, [1, 0, 2, NONE, NONE, NONE]);
        assert_eq!(p.removed, [3, 4, 5]);
    }

    #[test]
    fn by_id_pairs_the_shared_ids() {
        let p = Pairing::by_id(4, 6);
        assert_eq!(p.tuned_of, [0, 1, 2, 3]);
        assert_eq!((p.added, p.removed), (vec![4, 5], vec![]));
        let p = Pairing::by_id(3, 2);
        assert_eq!(p.tuned_of, [0, 1, NONE]);
        assert_eq!(p.compared(), 2);
        assert_eq!((p.added, p.removed), (vec![], vec![2]));
    }
}
