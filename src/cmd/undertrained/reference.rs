//! The reference set of `undertrained`: rows known to be untrained, given
//! with `--reference` as ids and ranges, or found automatically (reserved
//! placeholder entries and rows no token reaches).

use crate::vocab::{Preview, Vocab, is_placeholder};
use crate::{Error, Result};

/// What `--reference` asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReferenceSpec {
    /// Reserved placeholders and rows no token reaches.
    Auto,
    /// Inclusive id ranges as written (`5` is `5-5`), checked against the
    /// matrix when resolved.
    Ids(Vec<(u64, u64)>),
}

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

/// Resolves `spec` against a matrix of `rows` rows named `name`.
pub(crate) fn resolve(
    spec: &ReferenceSpec,
    vocab: Option<&Vocab>,
    rows: usize,
    name: &str,
) -> Result<Reference> {
    match spec {
        ReferenceSpec::Ids(ranges) => {
            if let Some(&(_, b)) = ranges.iter().find(|&&(_, b)| b >= rows as u64) {
                return Err(Error::BadInput(format!(
                    "--reference: id {b} is out of range: `{name}` has {rows} rows (ids 0..={})",
                    rows.saturating_sub(1)
                )));
            }
            // In order of their starts, each id listed once: however many
            // ranges repeat, the list stays within the matrix's rows.
            let mut sorted = ranges.clone();
            sorted.sort_unstable();
            let mut ids: Vec<u32> = Vec::new();
            for (a, b) in sorted {
                let start = a.max(ids.last().map_or(0, |&last| u64::from(last) + 1));
                if start <= b {
                    ids.extend(start as u32..=b as u32);
                }
            }
            Ok(Reference {
                ids,
                ..Reference::default()
            })
        }
        ReferenceSpec::Auto => {
            let Some(v) = vocab else {
                return Ok(Reference::default());
            };
            let rows = rows as u32;
            let placeholders =
                v.ids_where(|id, t| id < rows && (is_placeholder(t) || v.is_unused(id)));
            let unreachable: Vec<u32> = (0..rows).filter(|&id| !v.has_token(id)).collect();
            // Two disjoint ascending lists (placeholders have a token).
            let mut ids = [placeholders.as_slice(), &unreachable].concat();
            ids.sort_unstable();
            Ok(Reference {
                ids,
                placeholders: placeholders.len(),
                unreachable: unreachable.len(),
            })
        }
    }
}

/// The `auto` reference ids of a matrix of `rows` rows as far as `preview`
/// shows the vocabulary: what [`resolve`] will give if the rest of
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
            let r = resolve(&ReferenceSpec::Auto, Some(&v), 9, "w").unwrap();
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
    fn explicit_ids_are_range_checked() {
        let spec = ReferenceSpec::Ids(vec![(3, 4), (1, 1), (4, 4)]);
        assert_eq!(resolve(&spec, None, 5, "w").unwrap().ids, vec![1, 3, 4]);
        let err = resolve(&spec, None, 4, "w").unwrap_err().to_string();
        assert_eq!(
            err,
            "--reference: id 4 is out of range: `w` has 4 rows (ids 0..=3)"
        );
    }
}
