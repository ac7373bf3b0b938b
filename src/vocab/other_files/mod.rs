//! Reading the tokenizer files of downloads that have no tokenizer.json:
//! WordPiece `vocab.txt` (BERT and its kin) and byte-level BPE
//! `vocab.json` + `merges.txt` (GPT-2, RoBERTa and theirs), and the pieces
//! of a SentencePiece `tokenizer.model` (encoded as `LlamaTokenizer`
//! does, for that class) or of a T5 class's `spiece.model` with T5's
//! sentinels (see `spm`); and Mistral's `tekken.json` (see `tekken`).
//!
//! They are turned, in memory, into the tokenizer.json that `transformers`
//! writes for them (`AutoTokenizer.from_pretrained(dir)` runs the
//! converters of its `convert_slow_tokenizer.py`), which the rest of
//! embscope then reads like a real one. What a converter needs besides the
//! files comes from `tokenizer_config.json` (`tokenizer_class`,
//! `do_lower_case`, `tokenize_chinese_chars`, `strip_accents`,
//! `add_prefix_space`, `add_bos_token`, `added_tokens_decoder`),
//! `special_tokens_map.json` and `added_tokens.json`, with each class's
//! defaults. The class is `tokenizer_class`, else the one `config.json`'s
//! `model_type` uses, else BERT's for `vocab.txt` and GPT-2's for the
//! others. A class this module does not know still gives the vocabulary
//! (ids, tokens), but encoding text is refused, since its pipeline could
//! differ; so is a SentencePiece model's unless its class is Llama's.
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | [`convert`]: which files a download has, and the tokenizer.json made of them |
//! | `classes.rs` | the `transformers` classes followed, and which class a download is read as |
//! | `settings.rs` | what tokenizer_config.json and special_tokens_map.json say |
//! | `added.rs` | the added tokens of the tokenizer.json made |
//! | `vocabulary.rs` | `vocab.txt`, `vocab.json`, `merges.txt` and SentencePiece pieces, read as `transformers` reads them |
//! | `spm.rs` | the pieces of a SentencePiece `tokenizer.model` (protobuf) |
//! | `tekken.rs` | Mistral's `tekken.json`, as `mistral_common` reads it |

mod added;
mod classes;
mod settings;
mod spm;
mod tekken;
mod vocabulary;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value, json};
use tokenizers::decoders::wordpiece::WordPiece as WordPieceDecoder;
use tokenizers::normalizers::BertNormalizer;
use tokenizers::pre_tokenizers::bert::BertPreTokenizer;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::metaspace::{Metaspace, PrependScheme};
use tokenizers::processors::roberta::RobertaProcessing;
use tokenizers::processors::template::TemplateProcessing;

use super::TokenType;
use crate::error::{Error, Result};
use added::Added;
use classes::{Layout, Post, choose, class_name};
use settings::{Settings, token_of};
use vocabulary::Vocabulary;

/// The most T5 sentinels (`extra_ids`) read: T5 has 100; a hostile file
/// must not make millions of tokens.
const MAX_EXTRA_IDS: u32 = 1 << 16;

/// A tokenizer.json made from older files.
pub(crate) struct Made {
    /// The files read, the first named in messages.
    pub files: Vec<PathBuf>,
    /// The `transformers` tokenizer class whose conversion it follows, or
    /// the one the files name when it is not converted (see `refused`).
    pub class: Option<String>,
    /// The tokenizer.json.
    pub json: Arc<[u8]>,
    /// Why text cannot be encoded (a class not converted here, a
    /// SentencePiece model other than Llama's), as a clause: "tokenizer
    /// class ... is not supported".
    pub refused: Option<String>,
}

/// The tokenizer.json `transformers` would make from the older files of
/// `dir`, or `None` when it has none this reads. `config` is the parsed
/// `config.json`. A malformed file is an error naming it.
pub(crate) fn convert(dir: &Path, config: Option<&Value>) -> Result<Option<Made>> {
    let settings = Settings::read(dir)?;
    let name = class_name(settings.tok_config.as_ref(), config);
    let Some((layout, class)) = choose(dir, name.as_deref()) else {
        return tekken::convert(dir);
    };
    let mut files: Vec<PathBuf> = layout.files().iter().map(|f| dir.join(f)).collect();
    let vocab = match layout {
        Layout::WordPiece => Vocabulary::word_piece(&files[0])?,
        Layout::ByteLevelBpe => Vocabulary::byte_level(&files[0], &files[1])?,
        Layout::SentencePiece | Layout::T5Spiece => match Vocabulary::sentence_piece(&files[0])? {
            Some(vocab) => vocab,
            None => return Ok(None),
        },
    };
    // transformers builds Llama's encoding as its class does only for a
    // BPE model and a `llama` model type (or no config): otherwise the
    // vocabulary is read alone.
    let class = match (layout, &vocab) {
        (Layout::SentencePiece, Vocabulary::SentencePiece(m)) => {
            let model_type = config.and_then(|c| c.get("model_type")?.as_str());
            class.filter(|_| m.bpe && matches!(model_type, None | Some("llama")))
        }
        _ => class,
    };
    let roles = settings.roles(class)?;
    let index = vocab.index();

    let added = added_tokens(dir, layout, &settings, (&roles, &vocab, &index), &mut files)?;

    let role_token = |role: &str| {
        let (_, value) = roles.iter().find(|(r, _)| *r == role)?;
        token_of(value)
    };
    let special = |role: &str| {
        let token = role_token(role)?;
        let id = added.id(token).or_else(|| index.get(token).copied())?;
        Some((token.to_string(), id))
    };
    let pipeline = Pipeline::new(&files[0], layout, class.map(|c| c.post), &settings, special)?;
    let model = match layout {
        Layout::WordPiece => json!({
            "type": "WordPiece",
            "unk_token": role_token("unk").unwrap_or("[UNK]"),
            "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100,
        }),
        Layout::ByteLevelBpe => bpe_model(false, false),
        Layout::SentencePiece | Layout::T5Spiece => match &vocab {
            // Llama's class falls back to bytes whatever the model says.
            Vocabulary::SentencePiece(m) if m.bpe => {
                bpe_model(true, m.byte_fallback || class.is_some())
            }
            _ => {
                let unk = (vocab.pieces().iter()).position(|p| p.kind == TokenType::Unknown);
                let byte_fallback =
                    matches!(&vocab, Vocabulary::SentencePiece(m) if m.byte_fallback);
                json!({"type": "Unigram", "unk_id": unk, "byte_fallback": byte_fallback})
            }
        },
    };
    let head = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added.into_json(),
        "normalizer": pipeline.normalizer,
        "pre_tokenizer": pipeline.pre_tokenizer,
        "post_processor": pipeline.post_processor,
        "decoder": pipeline.decoder,
    });
    let (json, too_many) = vocab.write(&head, &model, class.is_some());

    let refused = match (class, layout) {
        (Some(_), _) => too_many,
        (None, Layout::SentencePiece | Layout::T5Spiece) => Some(
            "the encoding of a SentencePiece model is converted for tokenizer_class LlamaTokenizer with a llama model type only (transformers builds the others differently by class and model type)"
                .to_string(),
        ),
        (None, _) => Some(format!(
            "tokenizer class {:?} (tokenizer_config.json) with {} is not supported",
            name.as_deref().unwrap_or_default(),
            layout.files().join(" and "),
        )),
    };
    Ok(Some(Made {
        files,
        class: class.map(|c| c.name.to_string()).or(name),
        json: json.into(),
        refused,
    }))
}

/// The settings of a BPE `model` (its vocab and merges are written after).
fn bpe_model(fuse_unk: bool, byte_fallback: bool) -> Value {
    json!({
        "type": "BPE",
        "dropout": null,
        "unk_token": null,
        "continuing_subword_prefix": null,
        "end_of_word_suffix": null,
        "fuse_unk": fuse_unk,
        "byte_fallback": byte_fallback,
        "ignore_merges": false,
    })
}

/// The added tokens of the converted tokenizer, as transformers adds them:
/// tokenizer_config.json's `added_tokens_decoder` or else added_tokens.json
/// (added to `files` when read); a SentencePiece model's control, unknown
/// and user-defined pieces, and T5's sentinels; and the special tokens
/// `roles` and `extra_special_tokens` declare, at their vocabulary ids or
/// (but for SentencePiece) new ones after it.
fn added_tokens(
    dir: &Path,
    layout: Layout,
    settings: &Settings,
    (roles, vocab, index): (&[(&str, Value)], &Vocabulary, &HashMap<&str, u32>),
    files: &mut Vec<PathBuf>,
) -> Result<Added> {
    // tokenizer_config.json's added_tokens_decoder, or without one the
    // older added_tokens.json (transformers reads one or the other).
    let mut added = Added::default();
    let decoder = (settings.tok_config.as_ref()).filter(|c| c.contains_key("added_tokens_decoder"));
    if let Some(config) = decoder {
        added.add_decoder_tokens(&settings.path, config)?;
    } else {
        let file = dir.join("added_tokens.json");
        let specials: std::collections::HashSet<&str> = (roles.iter().map(|(_, v)| v))
            .chain(settings.extra_special_tokens())
            .filter_map(token_of)
            .collect();
        if added.add_file_tokens(&file, |t| specials.contains(&t))? {
            files.push(file);
        }
    }
    let sentence_piece = matches!(layout, Layout::SentencePiece | Layout::T5Spiece);
    if sentence_piece {
        // Its control and unknown pieces are special tokens, user-defined
        // ones plain added tokens, as transformers adds them.
        for (id, piece) in vocab.pieces().iter().enumerate() {
            let special = matches!(piece.kind, TokenType::Control | TokenType::Unknown);
            if special || piece.kind == TokenType::UserDefined {
                added.push(id as u32, &piece.text, special, Some(&not_normalized()));
            }
        }
    }
    if layout == Layout::T5Spiece {
        // T5's sentinels follow the pieces, the last first: `<extra_id_0>`
        // has the highest id.
        let n = settings.count("extra_ids", MAX_EXTRA_IDS)?.unwrap_or(100);
        let first = vocab.pieces().len() as u32;
        for i in 0..n {
            let id = first.saturating_add(i);
            let token = format!("<extra_id_{}>", n - 1 - i);
            added.push_from(&settings.path, id, &token, true, Some(&not_normalized()))?;
        }
    }
    if !sentence_piece {
        // Special tokens the vocabulary lacks get new ids after it, as
        // transformers adds them.
        let mut next = (index.len() as u32).max(added.end());
        for (_, value) in roles {
            added.special(value, index, &mut next);
        }
        for value in settings.extra_special_tokens() {
            added.special(value, index, &mut next);
        }
    }
    Ok(added)
}

/// The tokenizer.json steps around the model, as the class's converter
/// sets them (pairs of sequences are not converted: embscope encodes one).
struct Pipeline {
    normalizer: Value,
    pre_tokenizer: Value,
    post_processor: Value,
    decoder: Value,
}

impl Pipeline {
    /// The steps for `layout`, with `post`'s processor (none for a class
    /// not converted); `special` gives a role's token and id. `file` names
    /// the conversion in errors.
    fn new(
        file: &Path,
        layout: Layout,
        post: Option<Post>,
        settings: &Settings,
        special: impl Fn(&str) -> Option<(String, u32)>,
    ) -> Result<Pipeline> {
        let prefix_space = settings.flag("add_prefix_space")?;
        let add_prefix_space = prefix_space.unwrap_or(false);
        let (normalizer, pre_tokenizer, decoder) = match layout {
            Layout::WordPiece => (
                component(
                    file,
                    &BertNormalizer::new(
                        true,
                        settings.flag("tokenize_chinese_chars")?.unwrap_or(true),
                        settings.flag("strip_accents")?,
                        settings.flag("do_lower_case")?.unwrap_or(true),
                    ),
                )?,
                component(file, &BertPreTokenizer)?,
                component(file, &WordPieceDecoder::new("##".to_string(), true))?,
            ),
            Layout::ByteLevelBpe => (
                Value::Null,
                component(file, &ByteLevel::new(add_prefix_space, true, true))?,
                component(file, &ByteLevel::new(true, true, true))?,
            ),
            // Llama's: `▁` before the first piece of text (`legacy`: before
            // each; `add_prefix_space: false`: never). Without a class only
            // so the entries read as SentencePiece's (`▁king`): the encoding
            // is refused.
            Layout::SentencePiece | Layout::T5Spiece => {
                let scheme = match (prefix_space, post) {
                    (Some(false), Some(_)) => PrependScheme::Never,
                    (_, Some(_)) if settings.flag("legacy")? == Some(true) => PrependScheme::Always,
                    _ => PrependScheme::First,
                };
                (
                    Value::Null,
                    component(file, &Metaspace::new('▁', scheme, false))?,
                    Value::Null,
                )
            }
        };
        // `first $A last` (either may be absent), or nothing when a token
        // is missing (`check` reports a declared token the vocabulary
        // lacks).
        let template = |first: Option<&str>, last: Option<&str>| -> Result<Value> {
            // Each role's token (`Some(None)`: no role), `None` when missing.
            let token = |role: Option<&str>| role.map_or(Some(None), |r| special(r).map(Some));
            let (Some(first), Some(last)) = (token(first), token(last)) else {
                return Ok(Value::Null);
            };
            if first.is_none() && last.is_none() {
                return Ok(Value::Null);
            }
            let name = |s: &(String, u32)| s.0.clone();
            let single: Vec<String> = (first.iter().map(name))
                .chain(["$A".to_string()])
                .chain(last.iter().map(name))
                .collect();
            let specials: Vec<(String, u32)> = first.into_iter().chain(last).collect();
            let failed =
                |e: &dyn std::fmt::Display| Error::bad_file(file, format!("cannot convert: {e}"));
            let built = TemplateProcessing::builder()
                .try_single(single)
                .map_err(|e| failed(&e))?
                .special_tokens(specials)
                .build()
                .map_err(|e| failed(&e))?;
            component(file, &built)
        };
        let post_processor = match post {
            None => Value::Null,
            Some(Post::ClsSep) => template(Some("cls"), Some("sep"))?,
            Some(Post::Gpt2) if settings.flag("add_bos_token")?.unwrap_or(false) => {
                template(Some("bos"), None)?
            }
            Some(Post::BosEos) => {
                let bos = settings.flag("add_bos_token")?.unwrap_or(false);
                let eos = settings.flag("add_eos_token")?.unwrap_or(false);
                template(bos.then_some("bos"), eos.then_some("eos"))?
            }
            Some(Post::Gpt2) => component(file, &ByteLevel::new(true, false, true))?,
            Some(Post::Roberta) => match (special("sep"), special("cls")) {
                (Some(sep), Some(cls)) => component(
                    file,
                    &RobertaProcessing::new(sep, cls)
                        .trim_offsets(true)
                        .add_prefix_space(add_prefix_space),
                )?,
                _ => Value::Null,
            },
        };
        Ok(Pipeline {
            normalizer,
            pre_tokenizer,
            post_processor,
            decoder,
        })
    }
}

/// The flags of an added token matched on the text as written.
fn not_normalized() -> Map<String, Value> {
    let mut flags = Map::new();
    flags.insert("normalized".into(), json!(false));
    flags
}

/// A `tokenizers` component as its tokenizer.json value.
fn component(file: &Path, c: &impl serde::Serialize) -> Result<Value> {
    serde_json::to_value(c).map_err(|e| Error::bad_file(file, format!("cannot convert: {e}")))
}
