//! Value findings, from the statistics of the value pass (see `pass`):
//! NaN/Inf rows, all-zero rows, exact duplicate rows
//! (by a key of the stored bytes, confirmed byte for byte), the row-norm
//! distribution and its outliers, what the rows no token reaches hold, and
//! whether an untied head is a byte copy of the embedding.

use serde_json::{Value, json};

use super::header::UNREACHABLE_CODES;
use super::pass::{Scanned, Stats};
use super::{Finding, MAX_LISTED, Severity, Subject, cut, id_list, ids_phrase};
use crate::checkpoint::TensorEntry;
use crate::cmd::undertrained::median;
use crate::matrix::Matrix;
use crate::render::bytes;
use crate::roles::TieStatus;
use crate::vocab::Vocab;

/// Rows whose log-norm lies further than this many robust standard
/// deviations (1.4826 × MAD) from the median log-norm are outliers.
const OUTLIER_SIGMAS: f64 = 6.0;

/// Outliers among positive finite norms `(id, norm)`: ids whose log-norm
/// is more than [`OUTLIER_SIGMAS`] robust deviations from the median,
/// most extreme first, with the median and the bounds (as norms).
pub(crate) fn outliers(rows: &[(u32, f32)]) -> (Vec<u32>, f64, f64) {
    if rows.len() < 8 {
        return (Vec::new(), 0.0, f64::INFINITY);
    }
    let mut logs: Vec<f64> = rows.iter().map(|&(_, n)| f64::from(n).ln()).collect();
    let med = median(&mut logs);
    let mut dev: Vec<f64> = rows
        .iter()
        .map(|&(_, n)| (f64::from(n).ln() - med).abs())
        .collect();
    // A floor of 1% keeps near-constant norms (normalised rows) from
    // flagging rounding noise.
    let sigma = (1.4826 * median(&mut dev)).max(0.01);
    let limit = OUTLIER_SIGMAS * sigma;
    let mut out: Vec<(f64, u32)> = rows
        .iter()
        .map(|&(id, n)| ((f64::from(n).ln() - med).abs(), id))
        .filter(|&(d, _)| d > limit)
        .collect();
    out.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    (
        out.into_iter().map(|(_, id)| id).collect(),
        (med - limit).exp(),
        (med + limit).exp(),
    )
}

/// What unreachable rows hold, from their norms against the reachable
/// rows' median norm: `zero`, `random` (median norm off by more than 2×
/// from the trained rows: untrained), `trained-looking`, or `mixed`
/// (some zero, some not).
pub(crate) fn classify(norms: &[f32], reachable_median: Option<f64>) -> &'static str {
    let zero = norms.iter().filter(|&&n| n == 0.0).count();
    if zero == norms.len() {
        return "zero";
    }
    if zero > 0 {
        return "mixed";
    }
    let mut v: Vec<f64> = norms
        .iter()
        .filter(|n| n.is_finite())
        .map(|&n| f64::from(n))
        .collect();
    match reachable_median {
        Some(r) if r > 0.0 && !v.is_empty() => {
            let ratio = median(&mut v) / r;
            if (0.5..=2.0).contains(&ratio) {
                "trained-looking"
            } else {
                "random"
            }
        }
        _ => "random",
    }
}

/// Findings from the value pass; also completes the header finding about
/// unreachable rows in `earlier`.
pub(crate) fn findings(s: &Subject, scanned: &[Scanned], earlier: &mut [Finding]) -> Vec<Finding> {
    let mut out = Vec::new();
    let pad = pad_ids(s);
    let mut done: Vec<(&TensorEntry, &Stats)> = Vec::new();
    for Scanned { tensor: t, stats } in scanned {
        match stats {
            Ok((m, stats)) => {
                matrix_findings(s, t, m, stats, &pad, earlier, &mut out);
                done.push((t, stats));
            }
            Err(e) => out.push(Finding::new(
                Severity::Warn,
                "values-not-checked",
                format!("values of `{}` are not checked: {e}", t.name),
                json!({"tensor": t.name, "dtype": t.dtype.name()}),
            )),
        }
    }
    if let [(e, es), (h, hs)] = &done[..]
        && s.roles.tie.status == TieStatus::Untied
        && e.dtype == h.dtype
        && e.shape == h.shape
        && es.hashes == hs.hashes
        && s.ckpt.bytes(e) == s.ckpt.bytes(h)
    {
        out.push(Finding::new(
            Severity::Info,
            "untied-head-identical",
            format!(
                "`{}` is stored untied but is byte-identical to `{}`: tying would save {}",
                h.name,
                e.name,
                bytes(h.bytes())
            ),
            json!({"embedding": e.name, "head": h.name, "bytes": h.bytes()}),
        ));
    }
    out
}

/// Ids declared as the pad token by any file.
fn pad_ids(s: &Subject) -> Vec<u32> {
    s.specials
        .iter()
        .filter(|sp| sp.decl.role == "pad")
        .filter_map(|sp| sp.id.and_then(|id| u32::try_from(id).ok()))
        .collect()
}

fn reachable(vocab: Option<&Vocab>, id: u32) -> bool {
    vocab.is_none_or(|v| v.token(id).is_some())
}

fn matrix_findings(
    s: &Subject,
    t: &TensorEntry,
    m: &Matrix,
    stats: &Stats,
    pad: &[u32],
    earlier: &mut [Finding],
    out: &mut Vec<Finding>,
) {
    let vocab = s.vocab;
    let name = &t.name;
    // NaN and Inf.
    let mut bad: Vec<u32> = stats.nan.iter().chain(&stats.inf).copied().collect();
    bad.sort_unstable();
    bad.dedup();
    if !bad.is_empty() {
        out.push(Finding::new(
            Severity::Error,
            "non-finite-values",
            format!(
                "`{name}` has NaN or Inf in {} row(s): {}",
                bad.len(),
                ids_phrase(vocab, &bad, 5)
            ),
            json!({
                "tensor": name, "rows": bad.len(), "nan_rows": stats.nan.len(),
                "inf_rows": stats.inf.len(), "ids": id_list(vocab, &bad),
                "total": bad.len(), "truncated": cut(bad.len()),
            }),
        ));
    }
    // All-zero rows a token can reach.
    let (pad_zero, zero): (Vec<u32>, Vec<u32>) = stats
        .zero
        .iter()
        .copied()
        .filter(|&id| reachable(vocab, id))
        .partition(|id| pad.contains(id));
    if !zero.is_empty() {
        out.push(Finding::new(
            Severity::Warn,
            "zero-rows",
            format!(
                "`{name}` has {} all-zero row(s) that tokens reach: {}",
                zero.len(),
                ids_phrase(vocab, &zero, 5)
            ),
            json!({
                "tensor": name, "rows": zero.len(), "ids": id_list(vocab, &zero),
                "total": zero.len(), "truncated": cut(zero.len()),
            }),
        ));
    }
    if !pad_zero.is_empty() {
        out.push(Finding::new(
            Severity::Info,
            "pad-row-zero",
            format!(
                "`{name}` row of the pad token is all zero ({}), as nn.Embedding's padding_idx leaves it",
                ids_phrase(vocab, &pad_zero, 5)
            ),
            json!({
                "tensor": name, "ids": id_list(vocab, &pad_zero),
                "total": pad_zero.len(), "truncated": cut(pad_zero.len()),
            }),
        ));
    }
    // Rows that count for duplicates and norms: reachable, finite, non-zero.
    let live: Vec<(u32, f32)> = stats
        .norms
        .iter()
        .enumerate()
        .map(|(i, &n)| (i as u32, n))
        .filter(|&(id, n)| n.is_finite() && n > 0.0 && reachable(vocab, id))
        .collect();
    duplicates(vocab, name, m, stats, &live, out);
    let reach_median = norm_findings(vocab, name, &live, out);
    // What the rows past the tokenizer hold, added to the header finding
    // that counted them.
    let unreachable = vocab
        .and_then(|v| stats.norms.get(v.size()..))
        .unwrap_or_default();
    if !unreachable.is_empty()
        && let Some(f) = earlier
            .iter_mut()
            .find(|f| UNREACHABLE_CODES.contains(&f.code))
    {
        let kind = classify(unreachable, reach_median);
        let mut v: Vec<f64> = unreachable
            .iter()
            .filter(|n| n.is_finite())
            .map(|&n| f64::from(n))
            .collect();
        let med = if v.is_empty() {
            None
        } else {
            Some(median(&mut v))
        };
        if let Value::Object(map) = &mut f.evidence {
            let content = map
                .entry("content")
                .or_insert_with(|| Value::Object(Default::default()));
            content[name.as_str()] = json!({
                "kind": kind, "rows": unreachable.len(),
                "zero_rows": unreachable.iter().filter(|&&n| n == 0.0).count(),
                "median_norm": med, "reachable_median_norm": reach_median,
            });
        }
        let what = match kind {
            "zero" => "all zero".to_string(),
            "mixed" => "partly zero".to_string(),
            "random" => "untrained-looking (norms unlike the trained rows)".to_string(),
            _ => "trained-looking (norms like the reachable rows)".to_string(),
        };
        f.message
            .push_str(&format!("; in `{name}` they are {what}"));
    }
}

fn duplicates(
    vocab: Option<&Vocab>,
    name: &str,
    m: &Matrix,
    stats: &Stats,
    live: &[(u32, f32)],
    out: &mut Vec<Finding>,
) {
    // Rows with equal keys end up next to each other.
    let mut by_hash: Vec<(u64, u32)> = live
        .iter()
        .map(|&(id, _)| (stats.hashes[id as usize], id))
        .collect();
    by_hash.sort_unstable();
    let mut groups: Vec<Vec<u32>> = Vec::new();
    for bucket in by_hash.chunk_by(|a, b| a.0 == b.0).filter(|b| b.len() > 1) {
        // Confirm byte for byte: sorting the bucket by the rows' bytes puts
        // equal rows next to each other in O(n log n) comparisons, however
        // many rows a crafted file makes collide.
        let bytes = |id: &u32| m.row_bytes(*id as usize);
        let mut ids: Vec<u32> = bucket.iter().map(|&(_, id)| id).collect();
        ids.sort_by(|a, b| bytes(a).cmp(bytes(b)).then(a.cmp(b)));
        groups.extend(
            ids.chunk_by(|a, b| bytes(a) == bytes(b))
                .filter(|g| g.len() > 1)
                .map(<[u32]>::to_vec),
        );
    }
    if groups.is_empty() {
        return;
    }
    groups.iter_mut().for_each(|g| g.sort_unstable());
    groups.sort();
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

/// The norm summary and outliers; returns the median norm.
fn norm_findings(
    vocab: Option<&Vocab>,
    name: &str,
    live: &[(u32, f32)],
    out: &mut Vec<Finding>,
) -> Option<f64> {
    let min = live.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
    let max = live.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    let mut v: Vec<f64> = live.iter().map(|&(_, n)| f64::from(n)).collect();
    let med = median(&mut v);
    out.push(Finding::new(
        Severity::Info,
        "norm-summary",
        format!(
            "`{name}` row norms over {} reachable rows: min {:.4} ({}), median {med:.4}, max {:.4} ({})",
            live.len(),
            min.1,
            ids_phrase(vocab, &[min.0], 1),
            max.1,
            ids_phrase(vocab, &[max.0], 1),
        ),
        json!({
            "tensor": name, "rows": live.len(), "min": min.1, "min_id": super::id_token(vocab, min.0),
            "median": med, "max": max.1, "max_id": super::id_token(vocab, max.0),
        }),
    ));
    let placeholders: Vec<(u32, f32)> = vocab.map_or_else(Vec::new, |v| {
        live.iter()
            .copied()
            .filter(|&(id, _)| is_placeholder(v, id))
            .collect()
    });
    if !placeholders.is_empty() {
        let mut p: Vec<f64> = placeholders.iter().map(|&(_, n)| f64::from(n)).collect();
        let p_med = median(&mut p);
        let ids: Vec<u32> = placeholders.iter().map(|&(id, _)| id).collect();
        out.push(Finding::new(
            Severity::Info,
            "placeholder-rows",
            format!(
                "`{name}` has {} reserved placeholder token row(s) ({}): median norm {p_med:.4} against {med:.4} overall; {}",
                ids.len(),
                ids_phrase(vocab, &ids, 3),
                if (0.8..=1.25).contains(&(p_med / med)) {
                    "norms like the other rows"
                } else {
                    "placeholders are rarely or never trained, so this is expected"
                }
            ),
            json!({
                "tensor": name, "rows": ids.len(), "median_norm": p_med, "overall_median_norm": med,
                "ids": id_list(vocab, &ids), "total": ids.len(), "truncated": cut(ids.len()),
            }),
        ));
    }
    let (ids, lo, hi) = outliers(live);
    if !ids.is_empty() {
        let norm_of = |id: u32| {
            live.binary_search_by_key(&id, |r| r.0)
                .map_or(0.0, |i| live[i].1)
        };
        let low = ids
            .iter()
            .filter(|&&id| f64::from(norm_of(id)) < lo)
            .count();
        let listed: Vec<Value> = ids
            .iter()
            .take(MAX_LISTED)
            .map(|&id| {
                json!({"id": id, "token": vocab.and_then(|v| v.readable(id)), "norm": norm_of(id)})
            })
            .collect();
        let unused = vocab.map_or(0, |v| {
            ids.iter().filter(|&&id| is_placeholder(v, id)).count()
        });
        let note = if unused > 0 {
            format!("; {unused} of them are reserved placeholders")
        } else {
            String::new()
        };
        out.push(Finding::new(
            Severity::Info,
            "norm-outliers",
            format!(
                "`{name}` has {} row(s) with outlying norms ({} below {lo:.4}, {} above {hi:.4}), most extreme: {}{note}",
                ids.len(),
                low,
                ids.len() - low,
                ids_phrase(vocab, &ids, 5)
            ),
            json!({
                "tensor": name, "rows": ids.len(), "below": low, "above": ids.len() - low,
                "low_bound": lo, "high_bound": hi, "placeholder_tokens": unused, "ids": listed,
                "total": ids.len(), "truncated": cut(ids.len()),
            }),
        ));
    }
    Some(med)
}

/// Reserved placeholder entries ([`crate::vocab::is_placeholder`]), T5's
/// `<extra_id_0>` sentinels (unused until fine-tuning on span corruption),
/// and GGUF tokens of type `unused`.
fn is_placeholder(vocab: &Vocab, id: u32) -> bool {
    vocab.is_unused(id)
        || vocab.token(id).is_some_and(|token| {
            crate::vocab::is_placeholder(token) || token.starts_with("<extra_id_")
        })
}

#[cfg(test)]
mod tests;
