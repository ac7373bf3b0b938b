//! The `undertrained-candidates` info finding: the embedding indicators of
//! `undertrained` (norm and distance to the reference mean), from one more
//! streaming read of the embedding after the value pass (no head passes,
//! no encoding), counted against the strong threshold.

use serde_json::json;

use super::{Finding, MAX_LISTED, Severity, Subject, cut, id_list, ids_phrase};
use crate::cmd::undertrained::{self, ReferenceSpec, Request};
use crate::roles::Which;

/// The finding when rows outside the reference set score as strong
/// candidates; none otherwise
/// (or when there is no readable embedding: other findings say why).
pub(super) fn finding(s: &Subject) -> Option<Finding> {
    s.embedding?;
    let req = Request {
        // Enough ranked rows to list strong ones outside the reference set.
        top: 50 * MAX_LISTED,
        matrix: Some(Which::Embed),
        reference: ReferenceSpec::Auto,
        reachability: false,
        progress: false,
    };
    let r = undertrained::run(s.ckpt, s.roles, s.vocab, &req).ok()?;
    // Reserved and unreachable rows are expected to be untrained (and
    // unreachable rows have their own finding): only others are news.
    if r.strong_outside_reference == 0 {
        return None;
    }
    let ids: Vec<u32> = r
        .candidates
        .iter()
        .filter(|c| c.strong && !c.reference)
        .map(|c| c.id)
        .take(MAX_LISTED)
        .collect();
    Some(Finding::new(
        Severity::Info,
        "undertrained-candidates",
        format!(
            "{} row(s) of `{}` look untrained by the embedding indicators ({} outside the {} reference rows, such as {}); rank them with `embscope undertrained {}`",
            r.strong,
            r.embedding.as_deref().unwrap_or_default(),
            r.strong_outside_reference,
            r.reference.rows,
            ids_phrase(s.vocab, &ids[..ids.len().min(4)], 4),
            s.ckpt.model
        ),
        json!({
            "tensor": r.embedding, "rows": r.strong,
            "outside_reference": r.strong_outside_reference,
            "reference_rows": r.reference.rows, "threshold": r.threshold,
            "indicators": r.indicators, "ids": id_list(s.vocab, &ids),
            "total": r.strong_outside_reference, "truncated": cut(r.strong_outside_reference),
        }),
    ))
}
