//! `undertrained`: rank the tokens whose rows look untrained, from the
//! vocabulary matrices alone (Land & Bartolo 2024, "Fishing for Magikarp").
//!
//! Indicators, per row:
//! - head (the unembedding; the embedding itself when tied): the cosine
//!   between the row and the mean of the reference rows, both with the first
//!   principal component of the matrix removed (the component, of the
//!   mean-centred rows, is found by power iteration over an evenly strided
//!   sample of rows, see `component`, then one streaming pass scores every
//!   row, see `pass`);
//! - embedding: the L2 norm, and the Euclidean distance to the reference mean.
//!
//! Each indicator that applies becomes an oriented robust z-score and the
//! combined score is their mean (see `score`): the head cosine and the
//! embedding distance with a reference set, the norms without one. Rows are
//! ranked by it; a row is a strong candidate at [`score::STRONG`] or more.

mod component;
mod kernel;
mod pass;
mod reach;
mod reference;
mod score;

use serde::Serialize;

pub use reference::ReferenceSpec;
pub(crate) use score::median;
pub use score::{Histogram, STRONG};

use crate::Result;
use crate::checkpoint::Checkpoint;
use crate::matrix::Matrix;
use crate::progress::Progress;
use crate::roles::{Roles, Which};
use crate::vocab::{TokenKind, Vocab};
use pass::RowSums;
use score::Direction;

/// Bins of the score histogram.
const BINS: usize = 48;

/// What `undertrained` is asked.
#[derive(Debug, Clone)]
pub struct Request {
    /// Candidates to list.
    pub top: usize,
    /// One matrix only, or (None) the embedding and the head when there is one.
    pub matrix: Option<Which>,
    /// The reference set.
    pub reference: ReferenceSpec,
    /// Test whether each listed token's own text encodes to it.
    pub reachability: bool,
    /// Draw progress bars for long passes.
    pub progress: bool,
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
    /// Rows no token reaches among them (auto).
    pub unreachable: usize,
}

/// One ranked row.
#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    /// 1-based rank by score.
    pub rank: usize,
    /// Row id.
    pub id: u32,
    /// Readable token; null when no token has this id.
    pub token: Option<String>,
    /// Token kind; null when no token has this id.
    pub kind: Option<TokenKind>,
    /// Whether the row is in the reference set.
    pub reference: bool,
    /// Whether encoding the token's own text gives this id (null: not tested
    /// or not applicable, see [`Vocab::reaches_itself`]).
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
    /// The best-ranked rows, `--top` of them.
    pub candidates: Vec<Candidate>,
    /// What the reader should know about how the scores were made.
    pub notes: Vec<String>,
}

/// Per-row indicators; `None` when not computed.
#[derive(Default)]
struct Indicators {
    head_cosine: Option<Vec<f32>>,
    head_norm: Option<Vec<f32>>,
    embed_norm: Option<Vec<f32>>,
    embed_distance: Option<Vec<f32>>,
}

/// The mean of the finite `ids` rows of `m`, or `None` when there is none.
fn mean_of(m: &Matrix, ids: &[u32]) -> Option<Vec<f32>> {
    let mut sum = vec![0f64; m.cols()];
    let mut n = 0usize;
    for &id in ids {
        let row = m.row(id as usize);
        if row.iter().all(|x| x.is_finite()) {
            sum.iter_mut()
                .zip(&row)
                .for_each(|(s, &x)| *s += f64::from(x));
            n += 1;
        }
    }
    (n > 0).then(|| sum.iter().map(|s| (s / n as f64) as f32).collect())
}

fn sq(v: &[f32]) -> f64 {
    v.iter().map(|&x| f64::from(x) * f64::from(x)).sum()
}

fn norms(a: &RowSums) -> Vec<f32> {
    a.sq.iter().map(|&s| s.sqrt()).collect()
}

fn distances(a: &RowSums, mean: &[f32]) -> Vec<f32> {
    let mm = sq(mean);
    a.sq.iter()
        .zip(&a.dot_ref)
        .map(|(&s, &d)| (f64::from(s) - 2.0 * f64::from(d) + mm).max(0.0).sqrt() as f32)
        .collect()
}

/// Cosines to the reference mean with the component removed from both;
/// `None` when the mean lies along the component (nothing is left).
fn cosines(r: &RowSums, pc: &[f32], mean: &[f32]) -> Option<Vec<f32>> {
    let mc: f64 = mean
        .iter()
        .zip(pc)
        .map(|(&x, &c)| f64::from(x) * f64::from(c))
        .sum();
    let mm = sq(mean);
    let rest = (mm - mc * mc).max(0.0);
    if rest <= mm * 1e-10 || rest == 0.0 {
        return None;
    }
    let rest = rest.sqrt();
    Some(
        (0..r.sq.len())
            .map(|i| {
                let (s, d, c) = (
                    f64::from(r.sq[i]),
                    f64::from(r.dot_ref[i]),
                    f64::from(r.dot_pc[i]),
                );
                let len = (s - c * c).max(0.0).sqrt();
                if len > 0.0 {
                    ((d - c * mc) / (len * rest)) as f32
                } else if s.is_nan() {
                    f32::NAN
                } else {
                    0.0
                }
            })
            .collect(),
    )
}

/// The matrix of `t` over the mapped bytes.
fn matrix<'c>(ckpt: &'c Checkpoint, t: &'c crate::checkpoint::TensorEntry) -> Result<Matrix<'c>> {
    Matrix::new(&t.name, ckpt.bytes(t), t.dtype, &t.shape)
}

/// The `auto` reference rows of the embedding `m` (reserved placeholders
/// and rows no token of `vocab` reaches; none without a vocabulary) and
/// their mean (`None` when no reference row is finite), as [`run`] takes
/// them. For `check`, whose value pass makes the embedding's sums.
pub(crate) fn auto_reference(m: &Matrix, vocab: Option<&Vocab>) -> (Vec<u32>, Option<Vec<f32>>) {
    let ids = reference::resolve(&ReferenceSpec::Auto, vocab, m.rows(), m.name())
        .map(|r| r.ids)
        .unwrap_or_default();
    let mean = mean_of(m, &ids);
    (ids, mean)
}

/// The indicators and every row's combined score, as [`run`] gives them
/// for the embedding alone (`--matrix embed`), from sums made elsewhere:
/// each row's `|r|²` and `r·m` with the reference `mean` (both NaN for a
/// row that is not finite; `dot_ref` is unused without a mean).
pub(crate) fn embed_scores(
    sq: Vec<f32>,
    dot_ref: Vec<f32>,
    mean: Option<&[f32]>,
) -> (Vec<&'static str>, Vec<f64>) {
    let rows = sq.len();
    let a = RowSums {
        sq,
        dot_ref,
        dot_pc: Vec::new(),
    };
    let ind = Indicators {
        embed_norm: Some(norms(&a)),
        embed_distance: mean.map(|m| distances(&a, m)),
        ..Indicators::default()
    };
    let (names, zs) = scored_indicators(&ind);
    (names, score::combine(&zs, rows))
}

/// Runs the analysis.
pub fn run(
    ckpt: &Checkpoint,
    roles: &Roles,
    vocab: Option<&Vocab>,
    req: &Request,
) -> Result<UndertrainedReport> {
    let embed_t = match req.matrix {
        Some(Which::Head) => None,
        _ => Some(roles.matrix(ckpt, Which::Embed)?),
    };
    let head_t = match req.matrix {
        Some(Which::Head) => Some(roles.matrix(ckpt, Which::Head)?),
        Some(Which::Embed) => None,
        None => roles.matrix(ckpt, Which::Head).ok(),
    };
    let embed = embed_t.map(|t| matrix(ckpt, t)).transpose()?;
    let mut head = head_t.map(|t| matrix(ckpt, t)).transpose()?;
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
    let reference = reference::resolve(&req.reference, vocab, rows, first.name())?;
    if reference.ids.is_empty() {
        notes.push(match (&req.reference, vocab) {
            (ReferenceSpec::Auto, None) => "no tokenizer.json, so no reference rows: scores use the row norms only; give known-untrained ids with --reference".to_string(),
            _ => "no reference rows (no reserved placeholder entries, and a token reaches every row): scores use the row norms only; give known-untrained ids with --reference".to_string(),
        });
    }
    let reach_vocab = vocab.filter(|_| req.reachability && req.top > 0);
    let source = reach_vocab
        .filter(|v| reach::cuts_down(v))
        .and_then(|v| std::fs::read(v.file()).ok());
    let (measured, parsed) = std::thread::scope(|s| {
        // The reachability test's tokenizer file is parsed (for a cut-down
        // tokenizer, see `reach`), or else the full tokenizer built (a
        // fixed cost), alongside the passes.
        let parsed = source.as_deref().map(|b| s.spawn(move || reach::parse(b)));
        if let Some(v) = reach_vocab.filter(|v| !reach::cuts_down(v)) {
            s.spawn(move || v.encode("", false).ok());
        }
        let measured = measure(
            head.as_ref(),
            embed.as_ref(),
            tied,
            &reference.ids,
            req.progress,
        );
        (measured, parsed.and_then(|h| h.join().ok().flatten()))
    });
    let Measured {
        ind,
        passes,
        component_rows,
        component_iterations,
    } = measured;
    notes.extend(measured_notes(head.as_ref(), &ind, &reference.ids));
    let (indicators, zs) = scored_indicators(&ind);
    let scores = score::combine(&zs, rows);
    let histogram = score::histogram(&scores, BINS);
    let in_ref = |id: u32| reference.ids.binary_search(&id).is_ok();
    let strong_ids: Vec<u32> = (0..rows as u32)
        .filter(|&i| scores[i as usize] >= STRONG)
        .collect();
    let mut order: Vec<u32> = (0..rows as u32)
        .filter(|&i| scores[i as usize].is_finite())
        .collect();
    let scored = order.len();
    let top = req.top.min(order.len());
    let by_score = |a: &u32, b: &u32| {
        scores[*b as usize]
            .total_cmp(&scores[*a as usize])
            .then(a.cmp(b))
    };
    if top > 0 && top < order.len() {
        order.select_nth_unstable_by(top - 1, by_score);
    }
    order.truncate(top);
    order.sort_by(by_score);
    let reachable = match vocab.filter(|_| req.reachability) {
        Some(v) => reach::reachable(v, &order, parsed.as_ref()),
        None => Vec::new(),
    };
    let pick = |v: &Option<Vec<f32>>, i: u32| v.as_ref().map(|v| v[i as usize]);
    let candidates = order
        .iter()
        .enumerate()
        .map(|(rank, &id)| Candidate {
            rank: rank + 1,
            id,
            token: vocab.and_then(|v| v.readable(id)),
            kind: vocab.and_then(|v| v.kind(id)),
            reference: in_ref(id),
            reachable: reachable.get(rank).copied().flatten(),
            score: scores[id as usize],
            strong: scores[id as usize] >= STRONG,
            head_cosine: pick(&ind.head_cosine, id),
            head_norm: pick(&ind.head_norm, id),
            embed_norm: pick(&ind.embed_norm, id),
            embed_distance: pick(&ind.embed_distance, id),
        })
        .collect();
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
        },
        indicators,
        passes,
        component_rows,
        component_iterations,
        threshold: STRONG,
        strong: strong_ids.len(),
        strong_outside_reference: strong_ids.iter().filter(|&&i| !in_ref(i)).count(),
        scored,
        histogram,
        candidates,
        notes,
    })
}

/// The indicators and the passes that made them.
struct Measured {
    ind: Indicators,
    passes: usize,
    component_rows: usize,
    component_iterations: usize,
}

/// Streams the matrices, once each: the head against its principal
/// component (from a row sample, when there are reference rows), the
/// embedding unless it is the tied head.
fn measure(
    head: Option<&Matrix>,
    embed: Option<&Matrix>,
    tied: bool,
    reference: &[u32],
    progress: bool,
) -> Measured {
    let bar = |m: &Matrix| {
        Progress::new(
            progress,
            m.rows() as u64,
            &format!("undertrained: `{}`", m.name()),
        )
    };
    let mut ind = Indicators::default();
    let mut out = Measured {
        ind: Indicators::default(),
        passes: 0,
        component_rows: 0,
        component_iterations: 0,
    };
    if let Some(h) = head {
        let mean = mean_of(h, reference);
        let pc = mean
            .as_ref()
            .map(|_| component::sampled(h, component::SAMPLE_ROWS));
        if let Some(c) = &pc {
            (out.component_rows, out.component_iterations) = (c.rows, c.iterations);
        }
        let pcv = pc.as_ref().map(|c| c.v.as_slice());
        let a = pass::sums(h, mean.as_deref(), pcv, &bar(h));
        out.passes += 1;
        ind.head_cosine = mean
            .as_ref()
            .zip(pcv)
            .and_then(|(m, pc)| cosines(&a, pc, m));
        if tied {
            ind.embed_norm = Some(norms(&a));
            ind.embed_distance = mean.as_ref().map(|m| distances(&a, m));
        } else {
            ind.head_norm = Some(norms(&a));
        }
    }
    if let Some(e) = embed.filter(|_| !tied) {
        let mean = mean_of(e, reference);
        let a = pass::sums(e, mean.as_deref(), None, &bar(e));
        out.passes += 1;
        ind.embed_norm = Some(norms(&a));
        ind.embed_distance = mean.as_ref().map(|m| distances(&a, m));
    }
    out.ind = ind;
    out
}

/// A note when the head has reference rows but no cosine indicator.
fn measured_notes(head: Option<&Matrix>, ind: &Indicators, reference: &[u32]) -> Option<String> {
    let h = head.filter(|_| !reference.is_empty() && ind.head_cosine.is_none())?;
    Some(format!(
        "the reference mean of `{}` lies along its first principal component (or its rows are not finite): no cosine indicator",
        h.name()
    ))
}

/// The indicators the score averages, with their z-scores: the head
/// cosine and the embedding distance when there is a reference, else the
/// norms (of the head and of the embedding).
fn scored_indicators(ind: &Indicators) -> (Vec<&'static str>, Vec<Vec<f64>>) {
    let with_reference = ind.head_cosine.is_some() || ind.embed_distance.is_some();
    let candidates: [(&'static str, &Option<Vec<f32>>, Direction, bool); 4] = [
        (
            "head_cosine",
            &ind.head_cosine,
            Direction::High,
            with_reference,
        ),
        (
            "head_norm",
            &ind.head_norm,
            Direction::LowLog,
            !with_reference,
        ),
        (
            "embed_distance",
            &ind.embed_distance,
            Direction::LowLog,
            with_reference,
        ),
        (
            "embed_norm",
            &ind.embed_norm,
            Direction::LowLog,
            !with_reference,
        ),
    ];
    candidates
        .into_iter()
        .filter_map(|(name, values, dir, wanted)| {
            let values = values.as_ref().filter(|_| wanted)?;
            Some((name, score::robust_z(values, dir)))
        })
        .unzip()
}
