//! Whether the tokenizer belongs to the matrix: the `tokenizer-mismatch`
//! error and the `untrained-matrix` warning. Two routes lead to the error:
//!
//! - **sizes**: rows past the tokenizer's ids that look trained (norms like
//!   the rows tokens reach), at least a tenth of the matrix and at least
//!   [`MIN_ROWS`], where the matrix is no padding of the tokenizer (see
//!   `header::padding_multiple`). The padding of real checkpoints stays
//!   under 3% (Qwen2: 151,936 rows for 151,646 ids, Phi-3: 32,064 for
//!   32,011, Command-R: 256,000 for 255,029); another model's tokenizer
//!   leaves most of the rows unreached (Llama 2's 32,000 ids beside Llama
//!   3's 128,256 rows, GPT-2's 50,257 beside Qwen2's 151,936).
//! - **related tokens**: with enough word pairs (see `related`), related
//!   tokens that sit no closer than unrelated ones, in a matrix that shows
//!   training. This catches a tokenizer of the same size (Llama 2's on
//!   Mistral 7B's weights, both 32,000).
//!
//! The same pairs no closer, in a matrix that shows no sign of training
//! (rows as evenly spread as random vectors), are a warning: the rows
//! cannot tell whether the tokenizer belongs, and were likely never
//! trained. Declared special ids the tokenizer has no token for are
//! evidence of a mismatch, not a route to it: they have findings of their
//! own.

use serde_json::{Value, json};

use super::header::{UNREACHABLE_CODES, padding_multiple};
use super::pass::Scanned;
use super::related::{Relatedness, Training};
use super::values::classify;
use super::{Finding, Severity, Subject};
use crate::checkpoint::WeightFormat;
use crate::median::median_of;
use crate::vocab::Vocab;

/// Rows past the tokenizer needed, besides a tenth of the matrix, to say
/// by sizes alone that the tokenizer is another model's: a few
/// unreached rows in a small matrix say little.
pub(crate) const MIN_ROWS: u64 = 1000;

/// Whether `rows - used` rows past a tokenizer's `used` ids, holding
/// `content` (as `values::classify` names it), say by sizes alone that
/// the tokenizer belongs to another model.
pub(crate) fn foreign_by_size(rows: u64, used: u64, content: &str) -> bool {
    let unreached = rows.saturating_sub(used);
    content == "trained-looking"
        && unreached >= MIN_ROWS
        && unreached * 10 >= rows
        && padding_multiple(rows, used).is_none()
}

/// The findings on whether the tokenizer belongs to the matrix (none, the
/// error, the warning, or both), from the value pass's norms and the
/// `related` measurement. A mismatch by sizes takes the place of the
/// `unreachable-rows` warning in `findings`, with its evidence.
pub(crate) fn findings(
    s: &Subject,
    scanned: &[Scanned],
    related: Option<&Relatedness>,
    findings: &mut Vec<Finding>,
) -> Vec<Finding> {
    let Some(vocab) = s.vocab else {
        return Vec::new();
    };
    let Some(t) = s.embedding.or(s.head) else {
        return Vec::new();
    };
    let (rows, used) = (t.shape[0] as u64, vocab.size() as u64);
    let content = scanned
        .iter()
        .find(|x| x.tensor.name == t.name)
        .and_then(|x| x.stats.as_ref().ok())
        .and_then(|(_, stats)| {
            let (reached, past) = stats.norms.split_at_checked(used as usize)?;
            let live = reached.iter().filter(|n| n.is_finite() && **n > 0.0);
            let median = median_of(live.map(|&n| f64::from(n)));
            (!past.is_empty()).then(|| classify(past, median))
        });
    let by_size = content.is_some_and(|c| foreign_by_size(rows, used, c));
    let unrelated = related.filter(|r| !r.related());
    let by_pairs = unrelated.is_some_and(|r| r.training.trained());
    let mut out = Vec::new();
    if let Some(r) = unrelated.filter(|r| !r.training.trained()) {
        out.push(untrained(&t.name, r));
    }
    if !(by_size || by_pairs) {
        return out;
    }
    let mut reasons = Vec::new();
    let mut evidence = json!({
        "tokenizer": vocab.file().display().to_string(), "tensor": t.name,
        "rows": rows, "tokenizer_size": used,
        "by_size": by_size, "by_related_tokens": by_pairs,
    });
    if by_size {
        let unreached = rows - used;
        reasons.push(format!(
            "{unreached} of its {rows} rows ({:.0}%, ids {used}-{}) look trained but no token reaches them, and {rows} is no padding of {used} ids",
            100.0 * unreached as f64 / rows as f64,
            rows - 1
        ));
        // This finding says it all: the warning about the rows goes.
        if let Some(i) = findings.iter().position(|f| f.code == UNREACHABLE_CODES[1]) {
            let warning = findings.remove(i);
            evidence["unreachable"] = warning.evidence;
        }
    }
    let declared = declared_without_token(s, vocab);
    if !declared.is_empty() {
        let listed: Vec<String> = (declared.iter())
            .map(|(file, role, id)| format!("{file} {role}_token_id {id}"))
            .collect();
        reasons.push(format!(
            "it has no token for the special ids the model declares ({})",
            listed.join(", ")
        ));
        let declared = (declared.iter())
            .map(|(source, role, id)| json!({"source": source, "role": role, "id": id, "token": null}))
            .collect();
        evidence["declarations"] = Value::Array(declared);
    }
    if let Some(r) = related {
        if by_pairs {
            reasons.push(format!(
                "in a matrix that shows training, its related tokens (a word and its form with a leading space, capitalised or plural) sit no closer than unrelated ones: median cosine {:.2} ({}; {} pairs) against {:.2}, where a model's own tokenizer puts them 0.4 or more above",
                r.related,
                r.by_class(),
                r.word_pairs,
                r.random.max(r.across)
            ));
        }
        evidence["related"] = json!(r);
    }
    let file = (vocab.file().file_name()).map_or_else(
        || vocab.file().display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let name = match s.ckpt.format {
        WeightFormat::Gguf => format!("the vocabulary of {file}"),
        WeightFormat::Safetensors => file,
    };
    out.push(Finding::new(
        Severity::Error,
        "tokenizer-mismatch",
        format!(
            "{name} and `{}` do not belong together: {}",
            t.name,
            reasons.join("; ")
        ),
        evidence,
    ));
    out
}

/// The special-token declarations of an id the tokenizer has no token
/// for, as (source file, role, id), each once: in a foreign tokenizer, the
/// model's own specials (config.json's bos 128000 beside Llama 2's
/// tokenizer).
fn declared_without_token<'a>(s: &'a Subject, vocab: &Vocab) -> Vec<(&'a str, &'a str, i64)> {
    let mut out = Vec::new();
    for sp in &s.specials {
        let (Some(id), None) = (sp.id, &sp.decl.token) else {
            continue;
        };
        let entry = (sp.decl.source.as_str(), sp.decl.role.as_str(), id);
        if u32::try_from(id).is_ok_and(|id| !vocab.has_token(id)) && !out.contains(&entry) {
            out.push(entry);
        }
    }
    out
}

/// The `untrained-matrix` warning: related tokens no closer than others,
/// in rows as evenly spread as random ones.
fn untrained(name: &str, r: &Relatedness) -> Finding {
    let t = &r.training;
    Finding::new(
        Severity::Warn,
        "untrained-matrix",
        format!(
            "`{name}` shows no sign of training: no common direction ({:.1}, where random rows give about 1 and trained ones {} or more), no spread of row norms beyond chance ({:.1}, trained ones {} or more), and the tokenizer's related tokens sit no closer than unrelated ones ({:.2} against {:.2} over {} pairs): the weights look random, and cannot tell whether the tokenizer belongs to them",
            t.common_direction,
            Training::COMMON_DIRECTION,
            t.norm_spread,
            Training::NORM_SPREAD,
            r.related,
            r.random.max(r.across),
            r.word_pairs,
        ),
        json!({"tensor": name, "related": r}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_alone_say_foreign_only_past_padding_and_a_tenth() {
        let trained = "trained-looking";
        for (rows, used, content, want) in [
            // Another model's tokenizer.
            (128_256, 32_000, trained, true),
            (151_936, 50_257, trained, true),
            // Padding and reserved rows of real checkpoints.
            (151_936, 151_646, trained, false),
            (151_936, 151_665, trained, false),
            (32_064, 32_011, trained, false),
            (256_000, 255_029, trained, false),
            (50_304, 50_277, trained, false),
            (51_200, 50_295, trained, false),
            (102_400, 100_015, trained, false),
            // Rows past the tokenizer that were never trained.
            (128_256, 32_000, "random", false),
            (128_256, 32_000, "zero", false),
            (128_256, 32_000, "mixed", false),
            // Too few rows to tell, though a large share.
            (37, 30, trained, false),
            (1_500, 600, trained, false),
            // Many rows, a small share.
            (300_000, 285_000, trained, false),
            (2_048, 805, trained, true),
        ] {
            assert_eq!(
                foreign_by_size(rows, used, content),
                want,
                "{rows} rows, {used} ids, {content}"
            );
        }
    }
}
