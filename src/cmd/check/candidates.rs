//! The `undertrained-candidates` info finding: the embedding indicators
//! (norm, and distance to the mean of the `auto` reference rows, see
//! `crate::score`), scored as `embscope undertrained --matrix embed`
//! scores them, counted against the strong threshold. The finding names
//! that command: without `--matrix`, `undertrained` also weighs the head
//! by a cosine indicator that needs a principal component and a pass of
//! its own, and on a model with a head counts otherwise (Gemma 3 270M:
//! 8,938 rows here and with `--matrix embed`, 8,834 by default). The
//! value pass makes the sums they need (`|r|²` and `r·m`, see `pass`): no
//! read of its own, but for the embedding rows read before the vocabulary
//! was there (and none without a reference set, where the norm alone is
//! the indicator).

use serde_json::json;

use super::pass::{self, Reference, Scanned, Sums};
use super::{Finding, MAX_LISTED, Severity, Subject, cut, id_list, ids_phrase};
use crate::roles::Which;
use crate::score::STRONG;
use crate::score::indicators::{Indicators, distances, norms};
use crate::score::robust::best_first;

/// The embedding's combined scores as `undertrained --matrix embed`
/// makes them, with the indicators they average and the reference rows;
/// `None` when the embedding's values could not be read (other findings
/// say why). From the embedding's `sums`, which it completes first when
/// the pass read rows before the reference was known.
pub(super) struct EmbedScores<'r> {
    /// Every row's combined score (NaN where there is none).
    pub scores: Vec<f64>,
    /// The indicators the scores average.
    pub indicators: Vec<&'static str>,
    /// The reference set they were made against.
    pub reference: &'r Reference,
}

/// See [`EmbedScores`].
pub(super) fn embed_scores<'r>(
    s: &Subject,
    scanned: &[Scanned],
    sums: Option<Sums>,
    reference: &'r std::sync::OnceLock<Reference>,
) -> Option<EmbedScores<'r>> {
    let name = &s.embedding?.name;
    let (m, _) = scanned
        .iter()
        .find(|x| &x.tensor.name == name)?
        .stats
        .as_ref()
        .ok()?;
    let reference = reference.get_or_init(|| Reference::resolve(m, s.vocab));
    let mut sums = sums?;
    match &reference.mean {
        Some(mean) => pass::complete_dots(m, &mut sums, mean),
        None => sums.dot.clear(),
    }
    let Sums {
        mut sq, mut dot, ..
    } = sums;
    // As `undertrained` has them: NaN for a row whose sum is not finite.
    for (i, sq) in sq.iter_mut().enumerate() {
        if !sq.is_finite() {
            *sq = f32::NAN;
            if let Some(d) = dot.get_mut(i) {
                *d = f32::NAN;
            }
        }
    }
    let ind = Indicators {
        // As `undertrained --matrix embed` has them: the norm counts only
        // without a reference.
        embed_norm: reference.mean.is_none().then(|| norms(&sq)),
        embed_distance: (reference.mean.as_deref()).map(|mean| distances(&sq, &dot, mean)),
        ..Indicators::default()
    };
    let (indicators, scores) = ind.scores(sq.len());
    Some(EmbedScores {
        scores,
        indicators,
        reference,
    })
}

/// The finding when rows outside the reference set score as strong
/// candidates by the embedding's `scores`; none otherwise. Every strong
/// row goes to `strong` (ascending), for `check --plot`.
pub(super) fn finding(s: &Subject, embed: &EmbedScores, strong: &mut Vec<u32>) -> Option<Finding> {
    let name = &s.embedding?.name;
    let EmbedScores {
        scores,
        indicators,
        reference,
    } = embed;
    let in_ref = |id: u32| reference.ids.binary_search(&id).is_ok();
    strong.extend((0..scores.len() as u32).filter(|&i| scores[i as usize] >= STRONG));
    let strong = strong.len();
    // Reserved and unreachable rows are expected to be untrained (and
    // unreachable rows have their own finding): only others are news.
    let mut outside: Vec<u32> = (0..scores.len() as u32)
        .filter(|&i| scores[i as usize] >= STRONG && !in_ref(i))
        .collect();
    if outside.is_empty() {
        return None;
    }
    outside.sort_by(best_first(scores));
    let ids = &outside[..outside.len().min(MAX_LISTED)];
    // `undertrained` weighs the head too when there is one (the embedding
    // itself when tied), by the cosine indicator this finding has no pass
    // for: its default count may differ, `--matrix embed` gives this one.
    let has_head = s.roles.matrix(s.ckpt, Which::Head).is_ok();
    let command = match has_head {
        true => format!("embscope undertrained {} --matrix embed", s.ckpt.model),
        false => format!("embscope undertrained {}", s.ckpt.model),
    };
    let how = match has_head {
        true => " (without --matrix it also weighs the head, so its count may differ)",
        false => "",
    };
    Some(Finding::new(
        Severity::Info,
        "undertrained-candidates",
        format!(
            "{} row(s) of `{name}` look untrained by the embedding indicators ({} outside the {} reference rows, such as {}); `{command}` ranks them by the same rule{how}",
            strong,
            outside.len(),
            reference.ids.len(),
            ids_phrase(s.vocab, &ids[..ids.len().min(4)], 4),
        ),
        json!({
            "tensor": name, "rows": strong,
            "outside_reference": outside.len(),
            "reference_rows": reference.ids.len(), "threshold": STRONG,
            "indicators": indicators, "ids": id_list(s.vocab, ids),
            "total": outside.len(), "truncated": cut(outside.len()),
            "command": command,
        }),
    ))
}
