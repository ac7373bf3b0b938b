//! Which tensor is the input embedding, which the output head, and whether
//! they are tied: naming conventions of the major families (GGUF's
//! `token_embd.weight` and `output.weight` among them), shape against the
//! config, and transformers' tie resolution (GGUF: tied when no head is
//! stored).

use serde::Serialize;

use crate::checkpoint::{Checkpoint, TensorEntry, WeightFormat};
use crate::{Error, Result};

/// Name endings of input embeddings, most specific first.
const EMBEDDING_NAMES: &[&str] = &[
    "embed_tokens.weight",
    "wte.weight",
    "word_embeddings.weight",
    "embed_in.weight",
    "tok_embeddings.weight",
    "token_embd.weight",
    "shared.weight",
];

/// Name endings of output heads, most specific first.
const HEAD_NAMES: &[&str] = &[
    "lm_head.weight",
    "lm_head.linear.weight",
    "embed_out.weight",
    "output.weight",
];

/// Which matrix a command works on (`--matrix`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Which {
    /// The input embedding.
    Embed,
    /// The output head (the embedding itself on a tied model).
    Head,
}

/// A tensor chosen for a role, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Choice {
    /// The tensor's name.
    pub name: String,
    /// Why this one: the only candidate, or the shape that decided.
    pub reason: String,
    /// Other candidates that were passed over.
    pub passed_over: Vec<String>,
}

/// How the head relates to the embedding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TieStatus {
    /// Tied by config; no head stored (it is the embedding).
    Tied,
    /// Tied by config, yet a separate head is stored (transformers ignores it).
    TiedHeadStored,
    /// Untied, with a stored head.
    Untied,
    /// Untied by config but no head is stored: the model would load a random head.
    UntiedHeadMissing,
    /// No head at all: an encoder (BERT-style) with no LM head.
    NoHead,
    /// No tensors at all: a GGUF file that holds a vocabulary only, as
    /// llama.cpp ships for its tokenizer tests (`ggml-vocab-*.gguf`).
    VocabOnly,
}

impl TieStatus {
    /// A phrase for human output.
    pub fn describe(self) -> &'static str {
        match self {
            TieStatus::Tied => "tied (head is the embedding; not stored)",
            TieStatus::TiedHeadStored => "tied by config, but a separate head is stored",
            TieStatus::Untied => "untied (separate head stored)",
            TieStatus::UntiedHeadMissing => {
                "untied by config, but no head is stored: a random head would be loaded"
            }
            TieStatus::NoHead => "no head (encoder without an LM head)",
            TieStatus::VocabOnly => "none: the file holds a vocabulary only (no tensors)",
        }
    }
}

/// Tie flag as written, as resolved, and what the file holds.
#[derive(Debug, Clone, Serialize)]
pub struct Tie {
    /// `tie_word_embeddings` as written in config.json, or `tied_embeddings`
    /// in Mistral's params.json (null when absent).
    pub config: Option<bool>,
    /// The value transformers would use.
    pub resolved: bool,
    /// What the files hold, read against the flag.
    pub status: TieStatus,
    /// For a stored head under a tying config: whether its bytes equal the
    /// embedding's (null until [`Roles::compare_head`] has looked).
    pub head_identical: Option<bool>,
}

/// The embedding, the head and their tie.
#[derive(Debug, Clone, Serialize)]
pub struct Roles {
    /// The input embedding, if one was found.
    pub embedding: Option<Choice>,
    /// The stored output head, if any.
    pub head: Option<Choice>,
    /// The tie.
    pub tie: Tie,
}

impl Roles {
    /// Finds the roles in a checkpoint, from headers and config only.
    pub fn resolve(ckpt: &Checkpoint) -> Roles {
        let (vocab, hidden) = ckpt
            .config
            .as_ref()
            .map_or((None, None), |c| (c.vocab_size, c.hidden_size));
        let embedding = choose(ckpt, EMBEDDING_NAMES, vocab, hidden);
        let head = choose(ckpt, HEAD_NAMES, vocab, hidden);
        let written = ckpt.config.as_ref().and_then(|c| c.tie_word_embeddings);
        // GGUF has no tie flag: llama.cpp uses `token_embd` as the head
        // when no `output.weight` is stored. Without a config (a bare file),
        // or with a params.json that has no `tied_embeddings`, there is no
        // flag either, and the files decide alike.
        let resolved = ckpt
            .config
            .as_ref()
            .filter(|_| ckpt.format != WeightFormat::Gguf)
            .and_then(|c| c.tie_resolved())
            .unwrap_or(head.is_none());
        let is_lm = ckpt.config.as_ref().is_none_or(|c| {
            c.architectures.is_empty() || c.architectures.iter().any(|a| is_lm_architecture(a))
        });
        let status = match (&head, resolved) {
            _ if ckpt.format == WeightFormat::Gguf && ckpt.tensors.is_empty() => {
                TieStatus::VocabOnly
            }
            (Some(_), true) => TieStatus::TiedHeadStored,
            (Some(_), false) => TieStatus::Untied,
            (None, _) if !is_lm => TieStatus::NoHead,
            (None, true) => TieStatus::Tied,
            (None, false) => TieStatus::UntiedHeadMissing,
        };
        Roles {
            embedding,
            head,
            tie: Tie {
                config: written,
                resolved,
                status,
                head_identical: None,
            },
        }
    }

    /// When the config ties the head yet one is stored, compares it with the
    /// embedding byte for byte and records the answer in
    /// [`Tie::head_identical`]. This reads both matrices, so only the
    /// commands that report it (`info`, `check`) ask.
    pub fn compare_head(&mut self, ckpt: &Checkpoint) {
        if let (TieStatus::TiedHeadStored, Some(e), Some(h)) =
            (self.tie.status, &self.embedding, &self.head)
        {
            let (e, h) = (&ckpt.tensors[&e.name], &ckpt.tensors[&h.name]);
            self.tie.head_identical =
                Some(e.dtype == h.dtype && e.shape == h.shape && ckpt.bytes(e) == ckpt.bytes(h));
        }
    }

    /// The tensor a command works on for `--matrix`. The head of a tied
    /// model is its embedding.
    pub fn matrix<'c>(&self, ckpt: &'c Checkpoint, which: Which) -> Result<&'c TensorEntry> {
        self.need_tensors(ckpt)?;
        let missing = |what: String| Error::NoMatrix {
            model: ckpt.model.clone(),
            what,
        };
        let name = match which {
            Which::Embed => self.embedding.as_ref().map(|c| &c.name).ok_or_else(|| {
                missing(format!(
                    ": no input embedding found among {} tensors (looked for names ending in {})",
                    ckpt.tensors.len(),
                    EMBEDDING_NAMES.join(", ")
                ))
            })?,
            Which::Head => match (&self.head, self.tie.status) {
                (Some(h), _) => &h.name,
                (None, TieStatus::Tied) => return self.matrix(ckpt, Which::Embed),
                (None, TieStatus::NoHead) => {
                    return Err(missing(
                        " has no output head (an encoder without an LM head); use --matrix embed"
                            .into(),
                    ));
                }
                (None, status) => {
                    return Err(missing(format!(
                        " has no output head to read: {}",
                        status.describe()
                    )));
                }
            },
        };
        Ok(&ckpt.tensors[name])
    }

    /// An error for a file that holds a vocabulary only, for the commands
    /// that read a matrix (and `check`, which audits one): there is none,
    /// and no finding about it would help.
    pub fn need_tensors(&self, ckpt: &Checkpoint) -> Result<()> {
        if self.tie.status != TieStatus::VocabOnly {
            return Ok(());
        }
        Err(Error::NoMatrix {
            model: ckpt.model.clone(),
            what: " holds a vocabulary only (a GGUF file with no tensors), so there is no matrix to read; `embscope info` shows its tokenizer".into(),
        })
    }
}

fn is_lm_architecture(a: &str) -> bool {
    ["LM", "ConditionalGeneration", "ForPreTraining"]
        .iter()
        .any(|s| a.contains(s))
}

/// True when `name` is `suffix` or ends in `.suffix`, outside numbered layers.
fn matches_role(name: &str, suffix: &str) -> bool {
    let prefix_ok = match name.strip_suffix(suffix) {
        Some("") => true,
        Some(p) => p.ends_with('.'),
        None => false,
    };
    prefix_ok
        && !name
            .split('.')
            .any(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
}

fn choose(
    ckpt: &Checkpoint,
    names: &[&str],
    vocab: Option<u64>,
    hidden: Option<u64>,
) -> Option<Choice> {
    // Candidates in priority order: by naming rule, then shorter name.
    let mut cands: Vec<(usize, &TensorEntry)> = ckpt
        .tensors
        .values()
        .filter(|t| t.shape.len() == 2)
        .filter_map(|t| {
            names
                .iter()
                .position(|s| matches_role(&t.name, s))
                .map(|rank| (rank, t))
        })
        .collect();
    cands.sort_by_key(|(rank, t)| (*rank, t.name.len(), t.name.clone()));
    let fits = |t: &TensorEntry| {
        let rows_ok = vocab.is_none_or(|v| t.shape[0] as u64 == v);
        let cols_ok = hidden.is_none_or(|h| t.shape[1] as u64 == h);
        u8::from(rows_ok) + u8::from(cols_ok)
    };
    let top = cands.iter().map(|(_, t)| fits(t)).max()?;
    // The first candidate in priority order among the best fits.
    let chosen = cands
        .iter()
        .find(|(_, t)| fits(t) == top)
        .map(|(_, t)| *t)?;
    let passed_over: Vec<String> = cands
        .iter()
        .filter(|(_, t)| t.name != chosen.name)
        .map(|(_, t)| t.name.clone())
        .collect();
    let reason = if passed_over.is_empty() {
        "only candidate".to_string()
    } else if top == 2 && cands.iter().filter(|(_, t)| fits(t) == 2).count() == 1 {
        // Several candidates and one best fit: some config size was known.
        let sizes = match (vocab, hidden) {
            (Some(_), Some(_)) => "config vocab_size × hidden_size",
            (Some(_), None) => "config vocab_size",
            _ => "config hidden_size",
        };
        format!(
            "shape {:?} matches {sizes}; passed over {}",
            chosen.shape,
            passed_over.join(", ")
        )
    } else {
        format!(
            "first by naming convention; passed over {}",
            passed_over.join(", ")
        )
    };
    Some(Choice {
        name: chosen.name.clone(),
        reason,
        passed_over,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn naming_conventions() {
        for (name, suffix, ok) in [
            ("model.embed_tokens.weight", "embed_tokens.weight", true),
            (
                "model.language_model.embed_tokens.weight",
                "embed_tokens.weight",
                true,
            ),
            ("transformer.wte.weight", "wte.weight", true),
            (
                "embeddings.word_embeddings.weight",
                "word_embeddings.weight",
                true,
            ),
            ("gpt_neox.embed_in.weight", "embed_in.weight", true),
            ("tok_embeddings.weight", "tok_embeddings.weight", true),
            ("lm_head.weight", "lm_head.weight", true),
            ("output.weight", "output.weight", true),
            ("layers.0.attention.output.weight", "output.weight", false),
            ("model.xembed_tokens.weight", "embed_tokens.weight", false),
            ("lm_head.bias", "lm_head.weight", false),
        ] {
            assert_eq!(matches_role(name, suffix), ok, "{name}");
        }
    }

    #[test]
    fn a_vocabulary_only_file_has_no_matrix_to_give() {
        let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let only = fixtures.join("gguf/vocab-only.gguf");
        let ckpt = Checkpoint::open(only.to_str().unwrap(), "main").unwrap();
        let roles = Roles::resolve(&ckpt);
        assert_eq!(roles.tie.status, TieStatus::VocabOnly);
        for which in [Which::Embed, Which::Head] {
            let err = roles.matrix(&ckpt, which).unwrap_err();
            assert!(matches!(err, Error::NoMatrix { .. }), "{err}");
        }
        // An encoder without a head: no head, but an embedding.
        let bert = Checkpoint::open(fixtures.join("bert").to_str().unwrap(), "main").unwrap();
        let roles = Roles::resolve(&bert);
        assert!(roles.matrix(&bert, Which::Embed).is_ok());
        let err = roles.matrix(&bert, Which::Head).unwrap_err();
        assert!(matches!(err, Error::NoMatrix { .. }), "{err}");
    }

    #[test]
    fn lm_architectures() {
        for (a, ok) in [
            ("LlamaForCausalLM", true),
            ("GPT2LMHeadModel", true),
            ("Gemma3ForConditionalGeneration", true),
            ("BertForMaskedLM", true),
            ("BertModel", false),
            ("T5EncoderModel", false),
        ] {
            assert_eq!(is_lm_architecture(a), ok, "{a}");
        }
    }
}
