//! Which row of the fine-tune each base row is compared with: the row of
//! the same token text when both models have a tokenizer (a token the
//! fine-tune renumbered keeps its row), else the row of the same id. A
//! tuned row no base row pairs with is an added row; a base row no tuned
//! row pairs with, a removed one.

use crate::vocab::Vocab;

/// No row.
pub(crate) const NONE: u32 = u32::MAX;

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

    /// Each tuned row paired with the base row of its token's text; then
    /// the rows still unpaired by id, where the base row of that id is
    /// unpaired too (rows no token reaches, a reused slot).
    pub(crate) fn by_token(
        base: &Vocab,
        tuned: &Vocab,
        base_rows: usize,
        tuned_rows: usize,
    ) -> Pairing {
        let mut base_of = vec![NONE; tuned_rows];
        let mut used = vec![false; base_rows];
        let mut moved = 0;
        for (t, slot) in base_of.iter_mut().enumerate() {
            let Some(text) = tuned.token(t as u32) else {
                continue;
            };
            // Most tokens keep their id: the map of strings is built only
            // for those that do not.
            let b = match base.token(t as u32) {
                Some(same) if same == text => Some(t as u32),
                _ => base.id(text),
            };
            if let Some(b) = b.filter(|&b| (b as usize) < base_rows && !used[b as usize]) {
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
