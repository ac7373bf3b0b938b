//! The `auto` reference set: the rows expected to be untrained, known from
//! the vocabulary alone: reserved placeholder entries
//! (`<|reserved_special_token_3|>`, `[unused7]`, ...) and rows no token
//! reaches. The indicators compare every row with their mean.
//!
//! A model without either (SmolLM2, GPT-2) may still hold rows that never
//! moved: two tokens whose rows are byte for byte the same cannot both
//! have been trained, so the groups of identical rows (found as `check`
//! finds them, [`identical_groups`]) are its reference set then.

use rayon::prelude::*;

use crate::matrix::Matrix;
use crate::rows::key::hash_row;
use crate::same_hash::sharing_hash;
use crate::vocab::{Preview, Vocab, is_placeholder};

/// The reference rows and where they came from.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reference {
    /// Row ids, ascending, distinct.
    pub ids: Vec<u32>,
    /// How many are reserved placeholder entries (auto only).
    pub placeholders: usize,
    /// How many are rows no token reaches (auto only).
    pub unreachable: usize,
    /// How many are in groups of byte-identical rows (auto only, when
    /// there are neither placeholders nor rows without a token).
    pub identical: usize,
}

/// The `auto` reference set of a matrix of `rows` rows with `vocab` (empty
/// without one).
pub(crate) fn auto(vocab: Option<&Vocab>, rows: usize) -> Reference {
    let Some(v) = vocab else {
        return Reference::default();
    };
    let rows = rows as u32;
    let placeholders = v.ids_where(|id, t| id < rows && (is_placeholder(t) || v.is_unused(id)));
    let unreachable: Vec<u32> = (0..rows).filter(|&id| !v.has_token(id)).collect();
    // Two disjoint ascending lists (placeholders have a token).
    let mut ids = [placeholders.as_slice(), &unreachable].concat();
    ids.sort_unstable();
    Reference {
        ids,
        placeholders: placeholders.len(),
        unreachable: unreachable.len(),
        identical: 0,
    }
}

/// The groups of byte-identical rows of `m` among the rows `keyed` (a
/// key per id, equal for equal rows, ids distinct), each ascending, in
/// order of their first ids. Rows with equal keys are confirmed byte for
/// byte: sorting a bucket by the rows' bytes puts equal rows next to each
/// other in `O(n log n)` comparisons, however many rows a crafted file
/// makes collide.
pub(crate) fn identical_groups(
    m: &Matrix,
    keyed: impl ExactSizeIterator<Item = (u64, u32)> + Clone,
) -> Vec<Vec<u32>> {
    let mut by_key = sharing_hash(keyed, |&(key, _)| key);
    by_key.sort_unstable();
    let mut groups: Vec<Vec<u32>> = Vec::new();
    for bucket in by_key.chunk_by(|a, b| a.0 == b.0).filter(|b| b.len() > 1) {
        let bytes = |id: &u32| m.row_bytes(*id as usize);
        let mut ids: Vec<u32> = bucket.iter().map(|&(_, id)| id).collect();
        ids.sort_by(|a, b| bytes(a).cmp(bytes(b)).then(a.cmp(b)));
        groups.extend(
            ids.chunk_by(|a, b| bytes(a) == bytes(b))
                .filter(|g| g.len() > 1)
                .map(<[u32]>::to_vec),
        );
    }
    // Each group is ascending already (equal bytes sort by id).
    groups.sort();
    groups
}

/// The reference set of rows in groups of byte-identical rows of `m`
/// (every row's bytes hashed on all cores, then [`identical_groups`]).
pub(crate) fn identical(m: &Matrix) -> Reference {
    let keys: Vec<u64> = (0..m.rows())
        .into_par_iter()
        .with_min_len(1024)
        .map(|i| hash_row(m.row_bytes(i)))
        .collect();
    let groups = identical_groups(m, keys.iter().enumerate().map(|(i, &k)| (k, i as u32)));
    let mut ids: Vec<u32> = groups.concat();
    ids.sort_unstable();
    Reference {
        identical: ids.len(),
        ids,
        ..Reference::default()
    }
}

/// The `auto` reference ids of a matrix of `rows` rows as far as `preview`
/// shows the vocabulary: what [`auto`] will give if the rest of
/// tokenizer.json adds no token (the caller checks).
pub(crate) fn previewed(preview: &Preview, rows: usize) -> Vec<u32> {
    let (placeholders, unreachable) = preview.ids(rows, |t| is_placeholder(t));
    let mut ids = [placeholders, unreachable].concat();
    ids.sort_unstable();
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preview_guesses_what_the_vocabulary_resolves() {
        // Id 2 twice in the model vocab (the first wins), 3 a placeholder
        // an added token replaces, 5 a placeholder added twice (the last
        // wins), 6 added and 4 and 7 without a token; 9 rows.
        let added = |ids_contents: &[(u32, &str)]| {
            ids_contents
                .iter()
                .map(|(id, c)| format!(r#"{{"id": {id}, "content": "{c}"}}"#))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let model = r#""model": {"type": "WordLevel", "unk_token": "a", "vocab": {"a": 0, "b": 1, "[unused0]": 2, "x": 2, "[unused1]": 3}}"#;
        let tokens = [
            (3, "tok"),
            (5, "word"),
            (5, "<|reserved_1|>"),
            (6, "<unused9>"),
        ];
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokenizer.json");
        let resolved = |json: String| {
            std::fs::write(&file, json).unwrap();
            let mut guessed = None;
            let v = Vocab::load_previewing(dir.path(), None, false, &mut |p| {
                guessed = Some(previewed(p, 9));
            })
            .unwrap()
            .unwrap();
            let r = auto(Some(&v), 9);
            (guessed, r.ids, (r.placeholders, r.unreachable))
        };
        // Added tokens first, as Hugging Face writes them: a right guess.
        let (guessed, ids, counts) = resolved(format!(
            r#"{{"added_tokens": [{}], {model}}}"#,
            added(&tokens)
        ));
        assert_eq!(ids, [2, 4, 5, 6, 7, 8]);
        assert_eq!(counts, (3, 3));
        assert_eq!(guessed.as_ref(), Some(&ids));
        // Added after the model: the guess misses them, and is wrong.
        let (guessed, ids, _) = resolved(format!(
            r#"{{{model}, "added_tokens": [{}]}}"#,
            added(&tokens)
        ));
        assert_eq!(ids, [2, 4, 5, 6, 7, 8]);
        assert_eq!(guessed, Some(vec![2, 3, 4, 5, 6, 7, 8]));
    }

    #[test]
    fn only_pairs_that_share_keys_are_grouped_and_confirmed() {
        // Rows 0, 2 and 5 equal, 1 and 4 equal, 3 alone; keys that collide
        // for 3 and 5 too (a crafted file).
        let values: Vec<f32> = [1.0, 2.0, 1.0, 3.0, 2.0, 1.0]
            .iter()
            .flat_map(|&x| [x, -x])
            .collect();
        let bytes: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
        let m = Matrix::new("t", &bytes, crate::dtype::Dtype::F32, &[6, 2]).unwrap();
        let keys = [7u64, 8, 7, 7, 8, 7];
        let groups = identical_groups(&m, (0u32..6).map(|i| (keys[i as usize], i)));
        assert_eq!(groups, [vec![0, 2, 5], vec![1, 4]]);
        assert!(identical_groups(&m, std::iter::empty()).is_empty());
        let r = identical(&m);
        assert_eq!(r.ids, [0, 1, 2, 4, 5]);
        assert_eq!(r.identical, 5);
    }

    #[test]
    fn no_vocabulary_no_reference() {
        assert!(auto(None, 9).ids.is_empty());
    }
}
