//! The `duplicate-rows` finding: rows whose duplicate keys (see
//! `rows::key::row_key`) are equal, confirmed byte for byte (see
//! `score::reference::identical_groups`, which `undertrained` takes its
//! reference set from when there are no placeholders).

use serde_json::{Value, json};

use super::pass::Stats;
use super::{Finding, MAX_LISTED, Severity, cut, id_list, ids_phrase};
use crate::matrix::Matrix;
use crate::score::reference::identical_groups;
use crate::vocab::Vocab;

/// Groups of byte-identical rows among the `live` ones `(id, norm)`, as a
/// finding pushed on `out` (none without any).
pub(super) fn duplicates(
    vocab: Option<&Vocab>,
    name: &str,
    m: &Matrix,
    stats: &Stats,
    live: &[(u32, f32)],
    out: &mut Vec<Finding>,
) {
    let groups = identical_groups(
        m,
        live.iter().map(|&(id, _)| (stats.hashes[id as usize], id)),
    );
    if groups.is_empty() {
        return;
    }
    let rows: usize = groups.iter().map(Vec::len).sum();
    let shown: Vec<Value> = groups
        .iter()
        .take(MAX_LISTED)
        .map(|g| id_list(vocab, g))
        .collect();
    // Each group lists its first MAX_LISTED ids; its size says if it has more.
    let sizes: Vec<usize> = groups.iter().take(MAX_LISTED).map(Vec::len).collect();
    out.push(Finding::new(
        Severity::Info,
        "duplicate-rows",
        format!(
            "`{name}` has {} group(s) of byte-identical rows ({rows} rows), e.g. {}",
            groups.len(),
            ids_phrase(vocab, &groups[0], 4)
        ),
        json!({
            "tensor": name, "groups": groups.len(), "rows": rows, "first_groups": shown,
            "group_sizes": sizes, "total": groups.len(), "truncated": cut(groups.len()),
        }),
    ));
}
