//! Value findings, from the statistics of the value pass (see `pass`):
//! NaN/Inf rows, all-zero rows, exact duplicate rows
//! (by a key of the stored bytes, confirmed byte for byte), the row-norm
//! distribution and its outliers, what the rows no token reaches hold, and
//! whether an untied head is a byte copy of the embedding.

use rayon::prelude::*;
use serde_json::{Value, json};

use super::duplicates::duplicates;
use super::header::UNREACHABLE_CODES;
use super::pass::{Scanned, Stats};
use super::{Finding, MAX_LISTED, Severity, Subject, cut, id_list, ids_phrase};
use crate::checkpoint::TensorEntry;
use crate::matrix::Matrix;
use crate::median::{median_of, middle};
use crate::roles::TieStatus;
use crate::units::bytes;
use crate::vocab::Vocab;

/// Rows whose log-norm lies further than this many robust standard
/// deviations (1.4826 × MAD) from the median log-norm are outliers.
const OUTLIER_SIGMAS: f64 = 6.0;

/// Outliers among positive finite norms `(id, norm)`, whose middle norms
/// are `mid` (as [`middle`] gives them): ids whose log-norm is more than
/// [`OUTLIER_SIGMAS`] robust deviations from the median log-norm, most
/// extreme first, with the bounds (as norms).
pub(crate) fn outliers(rows: &[(u32, f32)], mid: (f64, f64)) -> (Vec<u32>, f64, f64) {
    if rows.len() < 8 {
        return (Vec::new(), 0.0, f64::INFINITY);
    }
    // The median log-norm, from the middle norms (the logarithm keeps
    // their order; an odd count has one, given twice).
    let med = (mid.0.ln() + mid.1.ln()) / 2.0;
    // A row's deviation |ln n - med| is the logarithm of its norm's ratio
    // to e^med, taken the larger way round: rows are compared by that
    // ratio, and only the middle ratios and the bounds take a logarithm
    // (one per row cost more than the rest of the outliers together).
    let centre = med.exp();
    let ratio = |n: f32| {
        let n = f64::from(n);
        (n / centre).max(centre / n)
    };
    let ratios = rows.iter().map(|&(_, n)| ratio(n));
    let (lo, hi, even) = middle(ratios).expect("rows");
    let mad = if even {
        (lo.ln() + hi.ln()) / 2.0
    } else {
        hi.ln()
    };
    // A floor of 1% keeps near-constant norms (normalised rows) from
    // flagging rounding noise.
    let sigma = (1.4826 * mad).max(0.01);
    let limit = OUTLIER_SIGMAS * sigma;
    let beyond = limit.exp();
    let mut out: Vec<(f64, u32)> = rows
        .iter()
        .map(|&(id, n)| (ratio(n), id))
        .filter(|&(q, _)| q > beyond)
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
    match (reachable_median, finite_median(norms)) {
        (Some(r), Some(med)) if r > 0.0 => {
            let ratio = med / r;
            if (0.5..=2.0).contains(&ratio) {
                "trained-looking"
            } else {
                "random"
            }
        }
        _ => "random",
    }
}

/// The median of the finite `norms` (`None` without any).
fn finite_median(norms: &[f32]) -> Option<f64> {
    median_of(
        norms
            .iter()
            .filter(|n| n.is_finite())
            .map(|&n| f64::from(n)),
    )
}

/// Findings from the value pass, each matrix on its own core; also
/// completes the header finding about unreachable rows in `earlier`.
pub(crate) fn findings(s: &Subject, scanned: &[Scanned], earlier: &mut [Finding]) -> Vec<Finding> {
    let pad = pad_ids(s);
    let per_matrix: Vec<(Vec<Finding>, Option<Unreachable>)> = scanned
        .par_iter()
        .map(|Scanned { tensor: t, stats }| match stats {
            Ok((m, stats)) => matrix_findings(s, t, m, stats, &pad),
            Err(e) => (
                vec![Finding::new(
                    Severity::Warn,
                    "values-not-checked",
                    format!("values of `{}` are not checked: {e}", t.name),
                    json!({"tensor": t.name, "dtype": t.dtype.name()}),
                )],
                None,
            ),
        })
        .collect();
    let mut out = Vec::new();
    for (found, unreachable) in per_matrix {
        out.extend(found);
        if let Some(u) = unreachable {
            u.complete(earlier);
        }
    }
    let done: Vec<(&TensorEntry, &Stats)> = scanned
        .iter()
        .filter_map(|x| x.stats.as_ref().ok().map(|(_, stats)| (x.tensor, stats)))
        .collect();
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
    vocab.is_none_or(|v| v.has_token(id))
}

/// The findings of one matrix, and what its unreachable rows hold.
fn matrix_findings(
    s: &Subject,
    t: &TensorEntry,
    m: &Matrix,
    stats: &Stats,
    pad: &[u32],
) -> (Vec<Finding>, Option<Unreachable>) {
    let mut out = Vec::new();
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
    duplicates(vocab, name, m, stats, &live, &mut out);
    let reach_median = norm_findings(s, name, &live, &mut out);
    // What the rows past the tokenizer hold, for the header finding that
    // counted them.
    let unreachable = vocab
        .and_then(|v| stats.norms.get(v.size()..))
        .unwrap_or_default();
    let note = (!unreachable.is_empty()).then(|| Unreachable::new(name, unreachable, reach_median));
    (out, note)
}

/// What the rows of one matrix that no token reaches hold, for the header
/// finding that counted them.
struct Unreachable {
    tensor: String,
    content: Value,
    /// The end of the finding's message: `; in `t` they are …`.
    phrase: String,
}

impl Unreachable {
    /// From the rows' `norms` and the reachable rows' median norm.
    fn new(name: &str, norms: &[f32], reach_median: Option<f64>) -> Self {
        let kind = classify(norms, reach_median);
        let med = finite_median(norms);
        let what = match kind {
            "zero" => "all zero",
            "mixed" => "partly zero",
            "random" => "untrained-looking (norms unlike the trained rows)",
            _ => "trained-looking (norms like the reachable rows)",
        };
        Unreachable {
            tensor: name.to_string(),
            content: json!({
                "kind": kind, "rows": norms.len(),
                "zero_rows": norms.iter().filter(|&&n| n == 0.0).count(),
                "median_norm": med, "reachable_median_norm": reach_median,
            }),
            phrase: format!("; in `{name}` they are {what}"),
        }
    }

    /// Adds this to the header finding about unreachable rows in `earlier`.
    fn complete(self, earlier: &mut [Finding]) {
        let Some(f) = earlier
            .iter_mut()
            .find(|f| UNREACHABLE_CODES.contains(&f.code))
        else {
            return;
        };
        if let Value::Object(map) = &mut f.evidence {
            let content = map
                .entry("content")
                .or_insert_with(|| Value::Object(Default::default()));
            content[self.tensor.as_str()] = self.content;
        }
        f.message.push_str(&self.phrase);
    }
}

/// The norm summary and outliers; returns the median norm.
fn norm_findings(
    s: &Subject,
    name: &str,
    live: &[(u32, f32)],
    out: &mut Vec<Finding>,
) -> Option<f64> {
    let vocab = s.vocab;
    let min = live.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
    let max = live.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    // The median, as `median_of` makes it; the outliers' median log-norm
    // comes from the same middle norms.
    let (mid_lo, mid_hi, even) = middle(live.iter().map(|&(_, n)| f64::from(n)))?;
    let med = if even {
        (mid_lo + mid_hi) / 2.0
    } else {
        mid_hi
    };
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
    let norm_of = |id: u32| {
        live.binary_search_by_key(&id, |r| r.0)
            .ok()
            .map(|i| live[i].1)
    };
    let placeholders: Vec<(u32, f32)> = s
        .placeholders
        .iter()
        .filter_map(|&id| Some((id, norm_of(id)?)))
        .collect();
    if !placeholders.is_empty() {
        let p_med =
            median_of(placeholders.iter().map(|&(_, n)| f64::from(n))).expect("placeholder rows");
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
    let (ids, lo, hi) = outliers(live, (mid_lo, mid_hi));
    if !ids.is_empty() {
        let norm_of = |id: u32| norm_of(id).unwrap_or(0.0);
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
        let unused = ids
            .iter()
            .filter(|id| s.placeholders.binary_search(id).is_ok())
            .count();
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

/// The ids of reserved placeholder entries ([`crate::vocab::is_placeholder`]),
/// T5's `<extra_id_0>` sentinels (reserved entries too, though T5's span
/// corruption trains the first of them, which is why `undertrained` leaves
/// them out of its reference set), and GGUF tokens of type `unused`,
/// ascending.
pub(crate) fn placeholders(vocab: &Vocab) -> Vec<u32> {
    vocab.ids_where(|id, token| {
        vocab.is_unused(id)
            || crate::vocab::is_placeholder(token)
            || token.starts_with("<extra_id_")
    })
}

#[cfg(test)]
mod tests;
