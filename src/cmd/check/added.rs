//! The `added-untrained` note: the added tokens (tokenizer.json
//! `added_tokens`, a GGUF vocabulary's control and user-defined tokens)
//! whose rows look untrained by the scores of `untrained_rows`, reserved
//! placeholders apart (those are expected to be). A base model's chat
//! tokens are the usual case: harmless until a template or a data set
//! uses them, which `template` and `data` then report as errors.

use serde_json::json;

use super::untrained_rows::UntrainedRows;
use super::{Finding, MAX_LISTED, Severity, Subject, cut, ids_phrase};

/// The note, when an added token outside the placeholders looks untrained.
pub(super) fn finding(s: &Subject, rows: &UntrainedRows) -> Option<Finding> {
    let v = s.vocab?;
    let mut ids: Vec<u32> = (v.added_tokens().iter())
        .map(|a| a.id)
        .filter(|id| s.placeholders.binary_search(id).is_err())
        .filter(|&id| rows.looks_untrained(id))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() {
        return None;
    }
    Some(Finding::new(
        Severity::Info,
        "added-untrained",
        format!(
            "{} added token(s) have rows that look untrained: {}; a chat template or data that uses them feeds the model untrained rows (check them with --chat-template and --data)",
            ids.len(),
            ids_phrase(s.vocab, &ids, 6)
        ),
        json!({
            "tokens": ids.iter().take(MAX_LISTED).map(|&id| rows.evidence(s, id)).collect::<Vec<_>>(),
            "total": ids.len(),
            "truncated": cut(ids.len()),
        }),
    ))
}
