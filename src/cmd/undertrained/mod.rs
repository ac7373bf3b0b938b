//! `undertrained`: rank the tokens whose rows look untrained, from the
//! vocabulary matrices alone (Land & Bartolo 2024, "Fishing for Magikarp").
//!
//! Indicators, per row:
//! - head (the unembedding; the embedding itself when tied): the cosine
//!   between the row and the mean of the reference rows, both with the first
//!   principal component of the matrix removed (the component, of the
//!   mean-centred rows, is found by power iteration over evenly spaced
//!   runs of rows, see `rows::component`, then one streaming pass scores
//!   every row, see `pass`);
//! - embedding: the L2 norm, and the Euclidean distance to the reference mean.
//!
//! Each indicator that applies becomes an oriented robust z-score and the
//! combined score is their mean (see `crate::score`, which `check` scores
//! the embedding with too): the head cosine and the embedding distance
//! with a reference set, the norms without one. Rows are ranked by it; a
//! row is a strong candidate at [`STRONG`] or more. The vocabulary load,
//! the component and the passes run alongside each other where they can
//! (see `plan`).
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | the request, the report, the ranking of rows |
//! | `plan.rs` | what runs alongside what, and the timed stages |
//! | `pass.rs` | the streaming pass: every row's `|r|²`, `r·m` and `r·c`, with the catch-up of rows read before the mean |
//! | `reference.rs` | `--reference`: ids and ranges, or the `auto` set |
//!
//! The candidates are the best rows outside the reference set (those are
//! expected to be untrained: listing them tells nothing new); the set is
//! summarised, and listed after them with `--include-reference`. When
//! the `auto` set finds neither placeholders nor rows without a token,
//! the groups of byte-identical rows are the reference (see
//! `score::reference`), at the cost of a hashing read and a second
//! scoring of the matrices.

mod pass;
mod plan;
mod reference;

use serde::Serialize;

pub use crate::score::{Histogram, STRONG};
pub use plan::Stage;
pub use reference::ReferenceSpec;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::OnceLock;

use crate::Error;
use crate::checkpoint::{Checkpoint, WeightFormat};
use crate::matrix::Matrix;
use crate::median;
use crate::roles::{Roles, Which};
use crate::score::EveryRow;
use crate::score::indicators::Indicators;
use crate::score::robust::histogram;
use crate::vocab::{Preview, TokenKind, Vocab};
use plan::{Clock, Held, Matrices};

/// Bins of the score histogram.
const BINS: usize = 48;

/// Candidates listed when `--top` is not given.
pub const DEFAULT_TOP: usize = 30;

/// What `undertrained` is asked.
#[derive(Debug, Clone)]
pub struct Request {
    /// Candidates to list.
    pub top: usize,
    /// One matrix only, or (None) the embedding and the head when there is one.
    pub matrix: Option<Which>,
    /// The reference set.
    pub reference: ReferenceSpec,
    /// Test whether some text reaches each listed token.
    pub reachability: bool,
    /// List the reference rows after the candidates.
    pub include_reference: bool,
    /// Draw progress bars for long passes.
    pub progress: bool,
}

impl Request {
    /// Whether any listed token is tested for reachability: asked for,
    /// and at least one candidate listed.
    pub fn tests_reachability(&self) -> bool {
        self.reachability && self.top > 0
    }
}

/// The reference set as used.
#[derive(Debug, Clone, Serialize)]
pub struct ReferenceSummary {
    /// `auto` or `ids`.
    pub source: &'static str,
    /// Rows in the set.
    pub rows: usize,
    /// Reserved placeholder entries among them (auto).
    pub placeholders: usize,
    /// Rows without a token among them (auto).
    pub unreachable: usize,
    /// Rows in groups of byte-identical rows among them (auto, for a
    /// model with neither placeholders nor rows without a token).
    pub identical: usize,
    /// Reference rows at or above the strong threshold.
    pub strong: usize,
    /// No reference rows: the scores are the norms' alone, a fallback in
    /// which a high score says a row is small, not that it is untrained.
    pub fallback: bool,
}

/// One ranked row.
#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    /// 1-based rank by score, among the rows outside the reference set
    /// (or, for a reference row, among those).
    pub rank: usize,
    /// Row id.
    pub id: u32,
    /// Readable token; null when no token has this id.
    pub token: Option<String>,
    /// Token kind; null when no token has this id.
    pub kind: Option<TokenKind>,
    /// Whether the row is in the reference set (listed after the others,
    /// with `--include-reference`).
    pub reference: bool,
    /// Whether some text encodes to a sequence holding this id, as the
    /// tokenizer runs (null: not tested or not known, see
    /// [`Vocab::reached`]).
    pub reachable: Option<bool>,
    /// Combined score (mean of the oriented robust z-scores).
    pub score: f64,
    /// Whether the score reaches the strong threshold.
    pub strong: bool,
    /// Head: cosine to the reference mean, first principal component removed.
    pub head_cosine: Option<f32>,
    /// Head: L2 norm (separately stored heads only).
    pub head_norm: Option<f32>,
    /// Embedding: L2 norm.
    pub embed_norm: Option<f32>,
    /// Embedding: distance to the reference mean.
    pub embed_distance: Option<f32>,
}

/// The `undertrained` report.
#[derive(Debug, Serialize)]
pub struct UndertrainedReport {
    /// The MODEL argument as given.
    pub model: String,
    /// The embedding analysed (null when not).
    pub embedding: Option<String>,
    /// The head analysed (the embedding's name when tied; null when not).
    pub head: Option<String>,
    /// Rows of the matrices.
    pub rows: usize,
    /// The reference set.
    pub reference: ReferenceSummary,
    /// The indicators the combined score averages.
    pub indicators: Vec<&'static str>,
    /// Streaming passes over the matrices, in total (one per matrix).
    pub passes: usize,
    /// Rows sampled for the head's principal component (0: none computed).
    pub component_rows: usize,
    /// Power iterations over that sample.
    pub component_iterations: usize,
    /// The strong-candidate threshold on the combined score.
    pub threshold: f64,
    /// Rows at or above the threshold.
    pub strong: usize,
    /// Of those, rows outside the reference set.
    pub strong_outside_reference: usize,
    /// Rows with a score (rows holding NaN or Inf have none).
    pub scored: usize,
    /// The distribution of the combined score.
    pub histogram: Histogram,
    /// The best-ranked rows outside the reference set, `--top` of them;
    /// then, with `--include-reference`, the reference rows by score.
    pub candidates: Vec<Candidate>,
    /// What the reader should know about how the scores were made.
    pub notes: Vec<Note>,
    /// How long each stage took (not in the JSON: it varies run to run).
    #[serde(skip)]
    pub stages: Vec<Stage>,
    /// Every row's figures and the vocabulary, for `rows` (not in the JSON).
    #[serde(skip)]
    pub every_row: EveryRow,
}

/// A note of the report; in the JSON, its text.
#[derive(Debug, Clone)]
pub struct Note {
    /// What the reader should know.
    pub text: String,
    /// About the method at work rather than what it found (how the
    /// principal component came out): for a reader who asked for detail
    /// (`-v`).
    pub detail: bool,
}

impl Serialize for Note {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

/// Runs the analysis, loading the vocabulary with `load` while the first
/// reads of the matrices run (see `plan`; `load` hands its argument to
/// [`Vocab::load_previewing`], or ignores it), for a caller that reads nothing
/// more of the matrices: their mapped pages are let go on all cores once
/// the passes are done (see [`Checkpoint::release`]).
pub fn run_loading<E: From<Error> + Send>(
    ckpt: &Checkpoint,
    roles: &Roles,
    load: impl FnOnce(&mut dyn FnMut(&Preview)) -> std::result::Result<Option<Vocab>, E> + Send,
    req: &Request,
) -> std::result::Result<UndertrainedReport, E> {
    let load = |preview: &mut dyn FnMut(&Preview)| -> std::result::Result<Held, E> {
        Ok(load(preview)?.map(Box::new))
    };
    crate::cpu::mask_ok()?;
    let clock = Clock::start();
    let embed_t = match req.matrix {
        Some(Which::Head) => None,
        _ => Some(roles.matrix(ckpt, Which::Embed)?),
    };
    let head_t = match req.matrix {
        Some(Which::Head) => Some(roles.matrix(ckpt, Which::Head)?),
        Some(Which::Embed) => None,
        None => roles.matrix(ckpt, Which::Head).ok(),
    };
    let embed = embed_t.map(|t| ckpt.matrix(t)).transpose()?;
    let mut head = head_t.map(|t| ckpt.matrix(t)).transpose()?;
    let tied = matches!((embed_t, head_t), (Some(e), Some(h)) if e.name == h.name);
    let mut notes = Vec::new();
    if let (Some(e), Some(h)) = (&embed, &head)
        && e.rows() != h.rows()
    {
        // Only when both were picked by default: one was not asked for.
        notes.push(format!(
            "`{}` has {} rows but `{}` has {}: the head is left out (score it alone with --matrix head)",
            e.name(),
            e.rows(),
            h.name(),
            h.rows()
        ));
        head = None;
    }
    let first = embed.or(head).expect("one matrix is chosen");
    let rows = first.rows();
    let held = OnceLock::new();
    let matrices = Matrices {
        head: head.as_ref(),
        embed: embed.as_ref(),
        tied,
        rows,
        name: first.name(),
    };
    let mut measured = plan::measure(&matrices, req, load, &held, &clock)?;
    if req.reference == ReferenceSpec::Auto && measured.reference.ids.is_empty() {
        // Neither placeholders nor rows without a token: rows that never
        // moved from a shared value are the reference, if there are any,
        // and every row is scored again against their mean.
        let identical = clock.time("identical rows", || {
            crate::score::reference::identical(&first)
        });
        if !identical.ids.is_empty() {
            let ids = identical.ids.iter().map(|&i| (u64::from(i), u64::from(i)));
            let again = Request {
                reference: ReferenceSpec::Ids(ids.collect()),
                ..req.clone()
            };
            let passes = measured.passes;
            measured = plan::measure(&matrices, &again, |_| Ok(None), &held, &clock)?;
            measured.passes += passes;
            measured.reference = identical;
        }
    }
    let plan::Measured {
        ind,
        reference,
        passes,
        component_rows,
        component_iterations,
        component_within_noise,
    } = measured;
    let read: Vec<_> = [embed.and(embed_t), head.and(head_t)]
        .into_iter()
        .flatten()
        .collect();
    let vocab = held.get().and_then(|v| v.as_deref());
    if reference.ids.is_empty() {
        notes.push(match (&req.reference, vocab) {
            (ReferenceSpec::Auto, None) => {
                // Where it looked, when there is more to say than the
                // missing file (a GGUF file, older tokenizer files).
                let why = match (ckpt.format, &ckpt.unread_tokenizer_files()[..]) {
                    (WeightFormat::Safetensors, []) => "no tokenizer.json".to_string(),
                    _ => ckpt.no_vocab(),
                };
                format!("{why}, so no reference rows: scores use the row norms only; give known-untrained ids with --reference")
            }
            _ => "no reference rows (no reserved placeholder entries, every row has a token, and no two rows are byte-identical): scores use the row norms only, so a high score says a row is small, not that it is untrained; give known-untrained ids with --reference".to_string(),
        });
    }
    notes.extend(measured_notes(head.as_ref(), &ind, &reference.ids));
    let mut notes: Vec<Note> = (notes.into_iter())
        .map(|text| Note {
            text,
            detail: false,
        })
        .collect();
    if let Some(h) = head.as_ref().filter(|_| component_within_noise) {
        notes.push(Note {
            text: format!(
                "no direction of `{}` stands out: along the top one of its {component_rows}-row sample the variance is within what evenly spread rows reach by chance, so the principal component removed (after {component_iterations} iterations) is one of many of about equal variance and changes the cosines little",
                h.name()
            ),
            detail: true,
        });
    }
    let in_ref = |id: u32| reference.ids.binary_search(&id).is_ok();
    let ranked = clock.time("scores", || rank(&ind, rows, req.top, &reference.ids));
    // The reference rows by score, after the others when asked for.
    let mut listed_ref: Vec<u32> = match req.include_reference {
        true => reference.ids.clone(),
        false => Vec::new(),
    };
    listed_ref.sort_by(crate::score::robust::best_first(&ranked.scores));
    let listed: Vec<u32> = ranked.order.iter().chain(&listed_ref).copied().collect();
    // The pages are let go on all cores while the reachability test (one
    // thread, most of the time) runs.
    let reachable = std::thread::scope(|s| {
        s.spawn(|| clock.time("release pages", || ckpt.release(&read)));
        match vocab.filter(|_| req.tests_reachability()) {
            Some(v) => clock.time("reachability", || v.reached(&listed)),
            None => Ok(Vec::new()),
        }
    });
    let reachable = reachable.unwrap_or_else(|e| {
        notes.push(Note {
            text: format!("no token's reach is tested: {e}"),
            detail: false,
        });
        Vec::new()
    });
    let pick = |v: &Option<Vec<f32>>, i: u32| v.as_ref().map(|v| v[i as usize]);
    let outside = ranked.order.len();
    let candidates = listed
        .iter()
        .enumerate()
        .map(|(rank, &id)| Candidate {
            rank: match rank < outside {
                true => rank + 1,
                false => rank - outside + 1,
            },
            id,
            token: vocab.and_then(|v| v.readable(id)),
            kind: vocab.and_then(|v| v.kind(id)),
            reference: in_ref(id),
            reachable: reachable.get(rank).copied().flatten(),
            score: ranked.scores[id as usize],
            strong: ranked.scores[id as usize] >= STRONG,
            head_cosine: pick(&ind.head_cosine, id),
            head_norm: pick(&ind.head_norm, id),
            embed_norm: pick(&ind.embed_norm, id),
            embed_distance: pick(&ind.embed_distance, id),
        })
        .collect::<Vec<Candidate>>();
    if req.reference == ReferenceSpec::Auto {
        notes.extend(unreached_note(&candidates).map(|text| Note {
            text,
            detail: false,
        }));
    }
    Ok(UndertrainedReport {
        model: ckpt.model.clone(),
        embedding: embed.map(|m| m.name().to_string()),
        head: head.map(|m| m.name().to_string()),
        rows,
        reference: ReferenceSummary {
            source: match req.reference {
                ReferenceSpec::Auto => "auto",
                ReferenceSpec::Ids(_) => "ids",
            },
            rows: reference.ids.len(),
            placeholders: reference.placeholders,
            unreachable: reference.unreachable,
            identical: reference.identical,
            strong: ranked.strong_ids.iter().filter(|&&i| in_ref(i)).count(),
            fallback: reference.ids.is_empty(),
        },
        indicators: ranked.indicators,
        passes,
        component_rows,
        component_iterations,
        threshold: STRONG,
        strong: ranked.strong_ids.len(),
        strong_outside_reference: ranked.strong_ids.iter().filter(|&&i| !in_ref(i)).count(),
        scored: ranked.scored,
        histogram: ranked.histogram,
        candidates,
        notes,
        stages: clock.stages(),
        every_row: EveryRow {
            indicators: ind,
            scores: ranked.scores,
            reference: reference.ids,
            vocab: held.into_inner().flatten(),
        },
    })
}

/// The rows in order of their combined score.
struct Ranked {
    /// Names of the indicators the score averages.
    indicators: Vec<&'static str>,
    /// Combined score of every row (NaN where there is none).
    scores: Vec<f64>,
    histogram: Histogram,
    /// The `top` best-scored rows, best first, ties to the lower id.
    order: Vec<u32>,
    /// Rows with a finite score.
    scored: usize,
    /// Rows at or above [`STRONG`].
    strong_ids: Vec<u32>,
}

/// Scores every row from `ind` and picks the `top` best outside
/// `reference` (ascending).
fn rank(ind: &Indicators, rows: usize, top: usize, reference: &[u32]) -> Ranked {
    let (indicators, scores) = ind.scores(rows);
    let histogram = histogram(&scores, BINS);
    let (order, scored, strong_ids) =
        best_rows(&scores, top, |id| reference.binary_search(&id).is_ok());
    Ranked {
        indicators,
        scores,
        histogram,
        order,
        scored,
        strong_ids,
    }
}

/// The `top` rows of finite `scores` but those `left_out`, best first (as
/// [`best_first`](crate::score::robust::best_first)
/// orders them), with the count of finite scores and the rows at or above
/// [`STRONG`] (of all rows), in one pass: a heap keeps the best `top` so
/// far, its worst on top, which most rows do not pass.
fn best_rows(
    scores: &[f64],
    top: usize,
    left_out: impl Fn(u32) -> bool,
) -> (Vec<u32>, usize, Vec<u32>) {
    // `--top` may be any number: no more rows than there are.
    let top = top.min(scores.len());
    // Greater is worse: a lower score, then a higher id.
    let mut best: BinaryHeap<(Reverse<u64>, u32)> = BinaryHeap::with_capacity(top);
    let (mut scored, mut strong) = (0, Vec::new());
    for (id, &s) in (0u32..).zip(scores) {
        if s >= STRONG {
            strong.push(id);
        }
        if !s.is_finite() {
            continue;
        }
        scored += 1;
        if left_out(id) {
            continue;
        }
        let row = (Reverse(median::key(s)), id);
        if best.len() < top {
            best.push(row);
        } else if let Some(mut worst) = best.peek_mut()
            && row < *worst
        {
            *worst = row;
        }
    }
    (
        best.into_sorted_vec()
            .into_iter()
            .map(|(_, id)| id)
            .collect(),
        scored,
        strong,
    )
}

/// A note naming the listed tokens no text reaches that the `auto`
/// reference set leaves out (it holds the rows without a token, not the
/// tokens no text reaches: knowing those takes every token's test).
fn unreached_note(candidates: &[Candidate]) -> Option<String> {
    let outside: Vec<String> = candidates
        .iter()
        .filter(|c| c.reachable == Some(false) && !c.reference)
        .map(|c| match &c.token {
            Some(t) => format!("{} \"{t}\"", c.id),
            None => c.id.to_string(),
        })
        .collect();
    let shown = outside
        .iter()
        .take(5)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    let more = match outside.len() {
        n if n > 5 => format!(", … {} more", n - 5),
        _ => String::new(),
    };
    (!outside.is_empty()).then(|| {
        format!(
            "{} listed token(s) that no text reaches are not in the reference set (reserved placeholders and rows without a token): {shown}{more}",
            outside.len()
        )
    })
}

/// A note when the head has reference rows but no cosine indicator.
fn measured_notes(head: Option<&Matrix>, ind: &Indicators, reference: &[u32]) -> Option<String> {
    let h = head.filter(|_| !reference.is_empty() && ind.head_cosine.is_none())?;
    Some(format!(
        "the reference mean of `{}` lies along its first principal component (or its rows are not finite): no cosine indicator",
        h.name()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::score::robust::best_first;

    #[test]
    fn best_rows_are_the_sorted_order_cut_at_top() {
        // Ties (scores repeat every 7 rows), both zeros, NaN and infinities.
        let mut scores: Vec<f64> = (0..300).map(|i| f64::from(i % 7) * 2.5 - 3.0).collect();
        scores[10] = f64::NAN;
        scores[11] = f64::INFINITY;
        scores[12] = -0.0;
        scores[13] = 0.0;
        scores[14] = f64::NEG_INFINITY;
        let mut sorted: Vec<u32> = (0..300)
            .filter(|&i| scores[i as usize].is_finite())
            .collect();
        sorted.sort_by(best_first(&scores));
        for top in [0, 1, 5, 43, 297, 1000, usize::MAX] {
            let (order, scored, strong) = best_rows(&scores, top, |_| false);
            assert_eq!(order, sorted[..top.min(297)], "top {top}");
            assert_eq!(scored, 297);
            let want: Vec<u32> = (0..300).filter(|&i| scores[i as usize] >= STRONG).collect();
            assert_eq!(strong, want);
        }
        // -0.0 ranks below 0.0, as `total_cmp` has it.
        let (order, _, _) = best_rows(&[-0.0, 0.0], 2, |_| false);
        assert_eq!(order, [1, 0]);
        let (order, _, _) = best_rows(&[3.0, 2.0, 1.0], 2, |id| id == 0);
        assert_eq!(order, [1, 2]);
        let (order, _, _) = best_rows(&[-0.0, 0.0], 2, |_| false);
        assert_eq!(order, [1, 0]);
    }
}
