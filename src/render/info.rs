//! Text for `info`.

use std::fmt::Write;

use super::{Human, Style, bytes, count, field, file_name, plural, shape};
use crate::checkpoint::WeightFormat;
use crate::cmd::info::{InfoReport, RoleTensor, UNREAD};
use crate::roles::TieStatus;

impl Human for InfoReport {
    fn human(&self, style: &Style) -> String {
        let mut out = String::new();
        let mut line = |label: &str, value: String| field(&mut out, style, label, &value);
        line("model", self.model.clone());
        if let Some(h) = &self.hub {
            line("hub", format!("{} @ {} ({})", h.id, h.revision, h.commit));
        }
        for (i, f) in self.files.iter().enumerate() {
            let tensors = f
                .tensors
                .map(|n| format!(", {}", plural(n, "tensor")))
                .unwrap_or_default();
            line(
                if i == 0 { "files" } else { "" },
                format!(
                    "{}  {}{}  {}",
                    f.path,
                    bytes(f.bytes),
                    tensors,
                    style.dim(&f.kind)
                ),
            );
        }
        match &self.config {
            Some(c) => {
                let mut kind = match &c.model_type {
                    Some(t) => t.clone(),
                    None if c.is_mistral_params() => "Mistral params.json".into(),
                    None => "model_type ?".into(),
                };
                if !c.architectures.is_empty() {
                    let _ = write!(kind, " ({})", c.architectures.join(", "));
                }
                let mut parts = vec![kind];
                let opt = |v: Option<u64>| v.map_or_else(|| "?".into(), count);
                parts.push(format!("vocab_size {}", opt(c.vocab_size)));
                parts.push(format!("hidden_size {}", opt(c.hidden_size)));
                if let Some(d) = &c.torch_dtype {
                    parts.push(format!("torch_dtype {d}"));
                }
                if let Some(t) = &c.file_type {
                    parts.push(format!("file_type {t}"));
                }
                if let Some(n) = &c.name {
                    parts.push(format!("name {n:?}"));
                }
                let mut config = parts.join(", ");
                if c.nested_text_config {
                    config.push_str(" (from text_config)");
                }
                line("config", config);
            }
            None => line("config", style.dim("no config.json")),
        }
        line(
            "embedding",
            role(self.embedding.as_ref(), "none found", style),
        );
        line("head", role(self.head.as_ref(), "none stored", style));
        let written = self
            .tie
            .config
            .map_or_else(|| "absent".to_string(), |b| b.to_string());
        let mut tie = match self.format {
            _ if self.tie.status == TieStatus::VocabOnly => self.tie.status.describe().to_string(),
            WeightFormat::Gguf => format!(
                "{}; GGUF has no tie flag (tied when no `output.weight` is stored)",
                self.tie.status.describe()
            ),
            WeightFormat::Safetensors if self.config.is_none() => format!(
                "{}; no config.json, so no tie flag (tied when no head is stored)",
                self.tie.status.describe()
            ),
            WeightFormat::Safetensors
                if self.config.as_ref().is_some_and(|c| c.is_mistral_params()) =>
            {
                match self.tie.config {
                    Some(b) => format!(
                        "{}; params.json tied_embeddings {b}",
                        self.tie.status.describe()
                    ),
                    None => format!(
                        "{}; params.json has no tied_embeddings (tied when no head is stored)",
                        self.tie.status.describe()
                    ),
                }
            }
            WeightFormat::Safetensors => format!(
                "{}; tie_word_embeddings {written} as written, {} resolved",
                self.tie.status.describe(),
                self.tie.resolved
            ),
        };
        if let Some(same) = self.tie.head_identical {
            tie.push_str(if same {
                "; stored head is byte-identical to the embedding"
            } else {
                "; stored head differs from the embedding and transformers will ignore it"
            });
        }
        line("tie", tie);
        line("tensors", count(self.tensor_count as u64));
        line(
            "tokenizer",
            match &self.tokenizer {
                Some(t) => format!(
                    "{}, {} ids ({} added, {} special)  {}",
                    t.model,
                    count(t.size as u64),
                    t.added,
                    t.special,
                    style.dim(&match &t.converted {
                        None => file_name(&t.file.display().to_string()),
                        Some(c) => {
                            let names: Vec<String> = (c.files.iter())
                                .map(|f| file_name(&f.display().to_string()))
                                .collect();
                            let how = match (c.encodes, &c.class) {
                                (true, Some(class)) => format!("converted as {class}"),
                                (_, Some(class)) => format!("{class}, vocabulary only: no --text"),
                                (_, None) => "vocabulary only: no --text".to_string(),
                            };
                            format!("{} ({how})", names.join(", "))
                        }
                    })
                ),
                None if self.format == WeightFormat::Gguf => {
                    style.dim("no vocabulary read from the GGUF metadata")
                }
                None => {
                    let unread: Vec<String> = (self.files.iter())
                        .filter(|f| f.kind == UNREAD)
                        .map(|f| file_name(&f.path))
                        .collect();
                    style.dim(&if unread.is_empty() {
                        "no tokenizer.json".to_string()
                    } else {
                        format!("no tokenizer.json ({} not read)", unread.join(", "))
                    })
                }
            },
        );
        if !self.added_tokens.is_empty() {
            line("added", added(&self.added_tokens));
        }
        out
    }
}

/// Added tokens shown in text; `--json` lists them all.
const ADDED_SHOWN: usize = 4;

/// `9 (9 special): 339 "<|begin_of_text|>", 340 "x" not special, … 7 more`.
fn added(tokens: &[crate::cmd::info::AddedEntry]) -> String {
    let special = tokens.iter().filter(|a| a.special).count();
    let mut parts: Vec<String> = (tokens.iter().take(ADDED_SHOWN))
        .map(|a| {
            let plain = if a.special { "" } else { " not special" };
            format!("{} {:?}{plain}", a.id, a.text)
        })
        .collect();
    if tokens.len() > ADDED_SHOWN {
        parts.push(format!(
            "… {} more",
            count((tokens.len() - ADDED_SHOWN) as u64)
        ));
    }
    format!(
        "{} ({} special): {}",
        count(tokens.len() as u64),
        count(special as u64),
        parts.join(", ")
    )
}

fn role(t: Option<&RoleTensor>, none: &str, style: &Style) -> String {
    match t {
        None => style.dim(none),
        Some(r) => {
            let t = &r.tensor;
            let mut s = format!(
                "{}  {}  {}  {}  {}",
                t.name,
                shape(&t.shape),
                t.dtype,
                bytes(t.bytes),
                file_name(&t.file)
            );
            if !r.chosen.passed_over.is_empty() {
                s.push_str(&style.dim(&format!("  ({})", r.chosen.reason)));
            }
            s
        }
    }
}
