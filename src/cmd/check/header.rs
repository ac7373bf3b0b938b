//! Header-only findings: side files that cannot be read, matrix sizes
//! against the config and the tokenizer (with padding detection), hidden
//! sizes, the tie, dtypes, and the tokenizer's own consistency. Nothing
//! here reads tensor values.

use serde_json::{Value, json};

use super::{Finding, Severity, Subject, cut, id_list, ids_phrase};
use crate::checkpoint::WeightFormat;
use crate::dtype::Dtype;
use crate::roles::TieStatus;
use crate::units::bytes;
use crate::vocab::Duplicate;

/// Codes of the finding about rows no token can reach; `values` adds what
/// those rows hold to it.
pub(crate) const UNREACHABLE_CODES: [&str; 2] = ["vocab-padding", "unreachable-rows"];

/// Every header-only finding, in check order.
pub(crate) fn findings(s: &Subject) -> Vec<Finding> {
    let mut out = Vec::new();
    presence(s, &mut out);
    sizes(s, &mut out);
    hidden(s, &mut out);
    tie(s, &mut out);
    dtypes(s, &mut out);
    tokenizer(s, &mut out);
    out
}

fn presence(s: &Subject, out: &mut Vec<Finding>) {
    for d in &s.ckpt.duplicate_names {
        out.push(Finding::new(
            Severity::Error,
            "duplicate-tensor-name",
            format!("`{}`: {}", d.file.display(), d.fault),
            json!({"file": d.file.display().to_string(), "names": d.names}),
        ));
    }
    if s.embedding.is_none() {
        out.push(Finding::new(
            Severity::Error,
            "no-embedding",
            format!(
                "no input embedding found among {} tensors",
                s.ckpt.tensors.len()
            ),
            json!({"tensors": s.ckpt.tensors.len()}),
        ));
    }
    for (u, skipped) in &s.unreadable {
        out.push(Finding::new(
            Severity::Error,
            "unreadable-file",
            format!(
                "`{}` is unreadable: {}; {skipped}",
                u.file.display(),
                u.fault
            ),
            json!({"file": u.file.display().to_string(), "fault": u.fault}),
        ));
    }
    // An unreadable config or tokenizer has its finding above.
    let config_unreadable = !s.ckpt.unreadable.is_empty();
    if s.ckpt.config.is_none() && !config_unreadable {
        out.push(Finding::new(
            Severity::Info,
            "no-config",
            "no config.json: checks against the config are skipped".into(),
            json!({"dir": s.ckpt.sources.dir.display().to_string()}),
        ));
    }
    if let Some(c) = s.vocab.and_then(|v| v.converted()) {
        let names: Vec<String> = (c.files.iter())
            .filter_map(|f| Some(f.file_name()?.to_string_lossy().into_owned()))
            .collect();
        let how = match (&c.refused, &c.class) {
            (Some(why), _) => format!("for ids and tokens only: {why}"),
            (None, class) => format!(
                "as transformers' {} converts them",
                class.as_deref().unwrap_or_default()
            ),
        };
        out.push(Finding::new(
            Severity::Info,
            "tokenizer-converted",
            format!(
                "no tokenizer.json: the vocabulary is read from {} {how}",
                names.join(", ")
            ),
            json!(c),
        ));
    }
    if s.vocab.is_none() && !s.vocab_unreadable {
        let unread = s.ckpt.unread_tokenizer_files();
        let mut evidence = json!({"dir": s.ckpt.sources.dir.display().to_string()});
        if !unread.is_empty() {
            evidence["unread"] = json!(unread);
        }
        out.push(Finding::new(
            Severity::Info,
            "no-tokenizer",
            if s.ckpt.format == WeightFormat::Gguf {
                "no vocabulary read from the GGUF metadata: checks against the tokenizer are skipped".into()
            } else if unread.is_empty() {
                "no tokenizer.json: checks against the tokenizer are skipped".into()
            } else {
                format!(
                    "no tokenizer.json (the directory has {}, which embscope does not read): checks against the tokenizer are skipped",
                    unread.join(", ")
                )
            },
            evidence,
        ));
    }
}

/// The multiple `rows` looks deliberately padded to from `used` ids, if it
/// does: `rows` is `used` rounded up to a power of two ≥ 8 (the largest
/// such is reported), or `rows` is a multiple of 64 or more and the gap is
/// at most 2% of the rows.
pub(crate) fn padding_multiple(rows: u64, used: u64) -> Option<u64> {
    if used >= rows || rows == 0 {
        return None;
    }
    let powers = [1024u64, 512, 256, 128, 64, 32, 16, 8];
    if let Some(&m) = powers
        .iter()
        .find(|&&m| rows.is_multiple_of(m) && used.div_ceil(m) * m == rows)
    {
        return Some(m);
    }
    let m = powers.iter().copied().find(|&m| rows.is_multiple_of(m))?;
    (m >= 64 && rows - used <= rows / 50).then_some(m)
}

fn sizes(s: &Subject, out: &mut Vec<Finding>) {
    let emb_rows = s.embedding.map(|t| t.shape[0] as u64);
    let head_rows = s.head.map(|t| t.shape[0] as u64);
    if let Some(config) = &s.ckpt.config
        && let Some(cv) = config.vocab_size
        && let Some(emb) = s.embedding
    {
        let rows = emb.shape[0] as u64;
        if cv != rows {
            out.push(Finding::new(
                Severity::Error,
                "config-vocab-mismatch",
                format!(
                    "{} is {cv}, `{}` has {rows} rows: loading fails with a size mismatch",
                    config.describe("vocab_size"),
                    emb.name
                ),
                json!({"config_vocab_size": cv, "tensor": emb.name, "rows": rows}),
            ));
        }
    }
    if let (Some(e), Some(h)) = (s.embedding, s.head)
        && e.shape[0] != h.shape[0]
    {
        out.push(Finding::new(
            Severity::Error,
            "head-rows-mismatch",
            format!(
                "`{}` has {} rows, `{}` has {}: ids index the two differently",
                e.name, e.shape[0], h.name, h.shape[0]
            ),
            json!({"embedding": e.name, "embedding_rows": e.shape[0], "head": h.name, "head_rows": h.shape[0]}),
        ));
    }
    let Some(vocab) = s.vocab else { return };
    let used = vocab.size() as u64;
    // Tokenizer against each stored matrix.
    for t in [s.embedding, s.head].into_iter().flatten() {
        let rows = t.shape[0] as u64;
        if used > rows {
            let beyond: Vec<u32> = (rows..used)
                .filter_map(|id| u32::try_from(id).ok())
                .filter(|&id| vocab.has_token(id))
                .collect();
            out.push(Finding::new(
                Severity::Error,
                "tokenizer-larger-than-matrix",
                format!(
                    "tokenizer has {used} ids, `{}` has {rows} rows: {} token(s) index past the end ({})",
                    t.name,
                    beyond.len(),
                    ids_phrase(Some(vocab), &beyond, 5)
                ),
                json!({
                    "tensor": t.name, "rows": rows, "tokenizer_size": used,
                    "tokens_beyond": beyond.len(), "ids": id_list(Some(vocab), &beyond),
                    "total": beyond.len(), "truncated": cut(beyond.len()),
                    "tokenizer": vocab.file().display().to_string(),
                }),
            ));
        }
    }
    // Rows no token reaches: once, against the embedding (else the head).
    let Some(rows) = emb_rows.or(head_rows) else {
        return;
    };
    if rows > used {
        let n = rows - used;
        let tensors: Vec<&str> = [s.embedding, s.head]
            .into_iter()
            .flatten()
            .filter(|t| t.shape[0] as u64 == rows)
            .map(|t| t.name.as_str())
            .collect();
        let multiple = padding_multiple(rows, used);
        let evidence = json!({
            "tensors": tensors, "rows": rows, "tokenizer_size": used,
            "unreachable": n, "first_unreachable": used,
            "padding_multiple": multiple,
        });
        let finding = match multiple {
            Some(m) => Finding::new(
                Severity::Info,
                UNREACHABLE_CODES[0],
                format!(
                    "{n} row(s) past the tokenizer's {used} ids: padding to a multiple of {m} ({rows} rows)"
                ),
                evidence,
            ),
            None => Finding::new(
                Severity::Warn,
                UNREACHABLE_CODES[1],
                format!(
                    "{n} row(s) past the tokenizer's {used} ids that no token can reach; {rows} is not a padded size: tokenizer and matrix may not belong together"
                ),
                evidence,
            ),
        };
        out.push(finding);
    }
}

fn hidden(s: &Subject, out: &mut Vec<Finding>) {
    let Some(emb) = s.embedding else { return };
    let cols = emb.shape[1] as u64;
    if let Some(h) = s.head
        && h.shape[1] as u64 != cols
    {
        out.push(Finding::new(
            Severity::Error,
            "hidden-size-mismatch",
            format!(
                "`{}` has {} columns, `{}` has {}",
                emb.name, cols, h.name, h.shape[1]
            ),
            json!({"embedding": emb.name, "embedding_cols": cols, "head": h.name, "head_cols": h.shape[1]}),
        ));
    }
    let Some(config) = &s.ckpt.config else { return };
    let Some(hs) = config.hidden_size else { return };
    // Factorised embeddings (ALBERT, OPT-350m) declare their own width.
    let declared = ["embedding_size", "word_embed_proj_dim"]
        .iter()
        .any(|k| config.raw.get(k).and_then(Value::as_u64) == Some(cols));
    if hs != cols && !declared {
        out.push(Finding::new(
            Severity::Error,
            "hidden-size-mismatch",
            format!(
                "{} is {hs}, `{}` has {cols} columns",
                config.describe("hidden size"),
                emb.name
            ),
            json!({"config_hidden_size": hs, "tensor": emb.name, "cols": cols}),
        ));
    }
}

fn tie(s: &Subject, out: &mut Vec<Finding>) {
    let tie = &s.roles.tie;
    let written = tie.config;
    // Who ties the head at load: transformers for a config.json; for
    // Mistral's params.json, its own loaders.
    let loader = match &s.ckpt.config {
        Some(c) if c.is_mistral_params() => "a loader that ties them",
        _ => "transformers ties them at load and",
    };
    match (tie.status, s.embedding, s.head) {
        (TieStatus::TiedHeadStored, Some(e), Some(h)) => {
            let evidence = json!({
                "config_tie_word_embeddings": written, "resolved": tie.resolved,
                "embedding": e.name, "head": h.name, "head_bytes": h.bytes(),
                "identical": tie.head_identical,
            });
            if tie.head_identical == Some(true) {
                out.push(Finding::new(
                    Severity::Info,
                    "tied-head-duplicate",
                    format!(
                        "config ties the head, and `{}` is stored as a byte-identical copy of `{}`: {} could be dropped",
                        h.name,
                        e.name,
                        bytes(h.bytes())
                    ),
                    evidence,
                ));
            } else {
                out.push(Finding::new(
                    Severity::Error,
                    "tied-head-differs",
                    format!(
                        "config ties the head, but `{}` differs from `{}`: {loader} ignores the stored head",
                        h.name, e.name
                    ),
                    evidence,
                ));
            }
        }
        (TieStatus::UntiedHeadMissing, Some(e), _) => out.push(Finding::new(
            Severity::Error,
            "untied-head-missing",
            format!(
                "config unties the head (tie_word_embeddings {}), but no head is stored: transformers would load a randomly initialised head",
                written.map_or("defaults to false".to_string(), |b| b.to_string())
            ),
            json!({"config_tie_word_embeddings": written, "resolved": tie.resolved, "embedding": e.name}),
        )),
        _ => {}
    }
}

/// `torch_dtype` spellings as the header dtype they mean.
fn config_dtype(s: &str) -> Option<Dtype> {
    Dtype::parse(s).filter(|d| d.is_float())
}

fn dtypes(s: &Subject, out: &mut Vec<Finding>) {
    // GGUF files mix types by design (Q4_K_M stores the head as Q6_K) and
    // llama.cpp computes with each as stored.
    if let (Some(e), Some(h)) = (s.embedding, s.head)
        && e.dtype != h.dtype
        && s.ckpt.format != WeightFormat::Gguf
    {
        out.push(Finding::new(
            Severity::Warn,
            "embed-head-dtype-differ",
            format!(
                "`{}` is {}, `{}` is {}: loading casts one of them",
                e.name, e.dtype, h.name, h.dtype
            ),
            json!({"embedding": e.name, "embedding_dtype": e.dtype.name(), "head": h.name, "head_dtype": h.dtype.name()}),
        ));
    }
    let Some(written) = s.ckpt.config.as_ref().and_then(|c| c.torch_dtype.clone()) else {
        return;
    };
    let Some(want) = config_dtype(&written) else {
        return;
    };
    let differ: Vec<Value> = [s.embedding, s.head]
        .into_iter()
        .flatten()
        .filter(|t| t.dtype != want)
        .map(|t| json!({"tensor": t.name, "dtype": t.dtype.name()}))
        .collect();
    if !differ.is_empty() {
        let stored: Vec<String> = [s.embedding, s.head]
            .into_iter()
            .flatten()
            .filter(|t| t.dtype != want)
            .map(|t| format!("`{}` is {}", t.name, t.dtype))
            .collect();
        out.push(Finding::new(
            Severity::Info,
            "config-dtype-differs",
            format!(
                "config.json torch_dtype is {written} ({want}), but {}",
                stored.join(", ")
            ),
            json!({"torch_dtype": written, "tensors": differ}),
        ));
    }
}

fn tokenizer(s: &Subject, out: &mut Vec<Finding>) {
    let Some(vocab) = s.vocab else { return };
    let file = vocab.file().display().to_string();
    // tokenizer.json, or the older file the vocabulary was converted from.
    let name = vocab
        .file()
        .file_name()
        .map_or_else(|| file.clone(), |n| n.to_string_lossy().into_owned());
    if let Some(fault) = vocab.tokenizer_fault() {
        out.push(Finding::new(
            Severity::Error,
            "tokenizer-unloadable",
            format!(
                "{name} cannot be loaded by the tokenizers crate: {fault}; no text can be encoded"
            ),
            json!({"tokenizer": file, "fault": fault}),
        ));
    }
    let mut missing = Vec::new();
    let mut moved = Vec::new();
    for (id, content) in vocab.config_added_tokens() {
        match vocab.id(content) {
            None => missing.push(json!({"id": id, "token": content})),
            Some(other) if other != *id => moved.push(
                json!({"token": content, "tokenizer_config_id": id, "tokenizer_json_id": other}),
            ),
            Some(_) => {}
        }
    }
    if !missing.is_empty() {
        out.push(Finding::new(
            Severity::Warn,
            "added-token-missing",
            format!(
                "{} added token(s) of tokenizer_config.json are not in {name} ({})",
                missing.len(),
                join_tokens(&missing, "token")
            ),
            json!({"count": missing.len(), "total": missing.len(), "truncated": cut(missing.len()), "tokens": first(missing), "tokenizer": file}),
        ));
    }
    if !moved.is_empty() {
        out.push(Finding::new(
            Severity::Error,
            "added-token-id-differs",
            format!(
                "{} added token(s) have another id in tokenizer_config.json than in {name} ({}): slow and fast tokenizers disagree",
                moved.len(),
                join_tokens(&moved, "token")
            ),
            json!({"count": moved.len(), "total": moved.len(), "truncated": cut(moved.len()), "tokens": first(moved), "tokenizer": file}),
        ));
    }
    let (mut by_id, mut by_token) = (Vec::new(), Vec::new());
    for d in vocab.duplicates() {
        match d {
            Duplicate::Id { id, tokens } => by_id.push(json!({"id": id, "tokens": tokens})),
            Duplicate::Token { token, ids } => by_token.push(json!({"token": token, "ids": ids})),
        }
    }
    if !by_id.is_empty() {
        out.push(Finding::new(
            Severity::Warn,
            "duplicate-token-ids",
            format!(
                "{} id(s) carry more than one token string in {name} (id {})",
                by_id.len(),
                by_id[0]["id"]
            ),
            json!({"count": by_id.len(), "total": by_id.len(), "truncated": cut(by_id.len()), "ids": first(by_id), "tokenizer": file}),
        ));
    }
    if !by_token.is_empty() {
        out.push(Finding::new(
            Severity::Warn,
            "duplicate-token-strings",
            format!(
                "{} token string(s) appear under more than one id in {name} ({})",
                by_token.len(),
                join_tokens(&by_token, "token")
            ),
            json!({"count": by_token.len(), "total": by_token.len(), "truncated": cut(by_token.len()), "tokens": first(by_token), "tokenizer": file}),
        ));
    }
}

fn first(mut v: Vec<Value>) -> Vec<Value> {
    v.truncate(super::MAX_LISTED);
    v
}

fn join_tokens(v: &[Value], key: &str) -> String {
    let mut parts: Vec<String> = v
        .iter()
        .take(5)
        .map(|x| format!("{:?}", x[key].as_str().unwrap_or_default()))
        .collect();
    if v.len() > 5 {
        parts.push(format!("… {} more", v.len() - 5));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_multiples() {
        for (rows, used, want) in [
            (32, 30, Some(32)),
            (50304, 50257, Some(128)),
            (32064, 32011, Some(64)),
            // Qwen2.5: a multiple of 128, not the next one, with a small gap.
            (151936, 151665, Some(128)),
            (37, 30, None),
            (40, 30, None),
            (1000, 999, Some(8)),
            (128256, 128256, None),
            (64, 100, None),
            // A multiple of 64 far above the tokenizer is a mismatch.
            (6400, 3000, None),
        ] {
            assert_eq!(padding_multiple(rows, used), want, "{rows} {used}");
        }
    }
}
