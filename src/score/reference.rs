//! The `auto` reference set: the rows expected to be untrained, known from
//! the vocabulary alone: reserved placeholder entries
//! (`<|reserved_special_token_3|>`, `[unused7]`, ...) and rows no token
//! reaches. The indicators compare every row with their mean.

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
    fn no_vocabulary_no_reference() {
        assert!(auto(None, 9).ids.is_empty());
    }
}
