//! Special-token findings: every declared bos/eos/pad/unk/mask/sep/cls id
//! from every file in range of the matrix and present in the vocabulary,
//! and the files agreeing with each other per role. A list (eos in
//! `generation_config.json`) agrees with a single id it contains.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{Finding, Severity, Special, Subject};
use crate::vocab::{ROLES, SpecialDecl};

fn describe(d: &SpecialDecl) -> String {
    match (&d.token, d.id) {
        (Some(t), _) if d.role == "additional" => {
            format!("{} additional_special_tokens {t:?}", d.source)
        }
        (Some(t), _) => format!("{} {}_token {t:?}", d.source, d.role),
        (None, Some(id)) => format!("{} {}_token_id {id}", d.source, d.role),
        (None, None) => format!("{} {}", d.source, d.role),
    }
}

fn evidence(d: &SpecialDecl, id: Option<i64>) -> Value {
    json!({"source": d.source, "role": d.role, "id": id, "token": d.token})
}

/// Whether the id sets declared by several files for one role agree: every
/// single id is the same, and every list contains it; lists without a
/// single id are equal as sets.
pub(crate) fn agree(sets: &[Vec<i64>]) -> bool {
    let singles: Vec<i64> = sets.iter().filter(|s| s.len() == 1).map(|s| s[0]).collect();
    if let Some(&one) = singles.first() {
        singles.iter().all(|&x| x == one) && sets.iter().all(|s| s.contains(&one))
    } else {
        let norm = |s: &Vec<i64>| {
            let mut s = s.clone();
            s.sort_unstable();
            s.dedup();
            s
        };
        sets.windows(2).all(|w| norm(&w[0]) == norm(&w[1]))
    }
}

/// Every special-token finding.
pub(crate) fn findings(s: &Subject) -> Vec<Finding> {
    let mut out = Vec::new();
    let rows = [s.embedding, s.head]
        .into_iter()
        .flatten()
        .map(|t| t.shape[0] as i64)
        .min();
    let resolved = &s.specials;

    let (mut out_of_range, mut negative, mut missing) = (Vec::new(), Vec::new(), Vec::new());
    for r in resolved {
        let d = &r.decl;
        match r.id {
            Some(id) if id < 0 => negative.push(r),
            Some(id) if rows.is_some_and(|rows| id >= rows) => out_of_range.push(r),
            Some(id) => {
                let known = s
                    .vocab
                    .is_none_or(|v| u32::try_from(id).is_ok_and(|id| v.has_token(id)));
                if !known {
                    missing.push(r);
                }
            }
            // A token string the vocabulary does not have.
            None if d.token.is_some() && s.vocab.is_some() => missing.push(r),
            None => {}
        }
    }
    let list =
        |v: &[&Special]| -> Vec<Value> { v.iter().map(|r| evidence(&r.decl, r.id)).collect() };
    let phrase = |v: &[&Special]| -> String {
        v.iter()
            .map(|r| describe(&r.decl))
            .collect::<Vec<_>>()
            .join("; ")
    };
    if !out_of_range.is_empty() {
        let rows = rows.unwrap_or_default();
        out.push(Finding::new(
            Severity::Error,
            "special-id-out-of-range",
            format!(
                "special token id(s) beyond the matrix's {rows} rows: {}",
                phrase(&out_of_range)
            ),
            json!({"rows": rows, "declarations": list(&out_of_range)}),
        ));
    }
    if !negative.is_empty() {
        out.push(Finding::new(
            Severity::Warn,
            "special-id-negative",
            format!(
                "negative special token id(s), an index error if ever used: {}",
                phrase(&negative)
            ),
            json!({"declarations": list(&negative)}),
        ));
    }
    if !missing.is_empty() {
        out.push(Finding::new(
            Severity::Warn,
            "special-token-missing",
            format!(
                "special token(s) not in the vocabulary: {}",
                phrase(&missing)
            ),
            json!({"declarations": list(&missing)}),
        ));
    }

    // Agreement per role, between files.
    let mut disagree = Vec::new();
    for role in ROLES {
        let mut by_source: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
        let mut order: Vec<&str> = Vec::new();
        for r in resolved.iter().filter(|r| r.decl.role == role) {
            let Some(id) = r.id else { continue };
            let src = r.decl.source.as_str();
            if !order.contains(&src) {
                order.push(src);
            }
            by_source.entry(src).or_default().push(id);
        }
        let sets: Vec<Vec<i64>> = order.iter().map(|s| by_source[s].clone()).collect();
        if sets.len() > 1 && !agree(&sets) {
            let per_source: Vec<Value> = order
                .iter()
                .map(|src| {
                    let ids = &by_source[src];
                    let tokens: Vec<Option<String>> = ids
                        .iter()
                        .map(|&id| {
                            u32::try_from(id)
                                .ok()
                                .and_then(|id| s.vocab.and_then(|v| v.readable(id)))
                        })
                        .collect();
                    json!({"source": src, "ids": ids, "tokens": tokens})
                })
                .collect();
            let summary = order
                .iter()
                .map(|src| {
                    let ids = &by_source[src];
                    let ids: Vec<String> = ids.iter().map(i64::to_string).collect();
                    format!("{src} {}", ids.join("/"))
                })
                .collect::<Vec<_>>()
                .join(", ");
            disagree.push((role, summary, per_source));
        }
    }
    if !disagree.is_empty() {
        let message = disagree
            .iter()
            .map(|(role, summary, _)| format!("{role}: {summary}"))
            .collect::<Vec<_>>()
            .join("; ");
        let roles: serde_json::Map<String, Value> = disagree
            .into_iter()
            .map(|(role, _, v)| (role.to_string(), Value::Array(v)))
            .collect();
        out.push(Finding::new(
            Severity::Warn,
            "special-tokens-disagree",
            format!("files declare different special tokens: {message}"),
            json!({"roles": roles}),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::agree;

    #[test]
    fn eos_lists_agree_with_their_members() {
        assert!(agree(&[vec![3], vec![3]]));
        assert!(agree(&[vec![3], vec![3, 4], vec![3]]));
        assert!(!agree(&[vec![3], vec![4]]));
        assert!(!agree(&[vec![3], vec![3, 4], vec![4]]));
        assert!(!agree(&[vec![3], vec![1, 2]]));
        assert!(agree(&[vec![1, 2], vec![2, 1]]));
        assert!(!agree(&[vec![1, 2], vec![1, 3]]));
    }
}
