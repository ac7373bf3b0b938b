//! The vocabulary of a GGUF checkpoint, read from its `tokenizer.ggml.*`
//! metadata (as parsed by `candle_core::quantized::gguf_file`).
//!
//! Owns validating those keys (types, lengths, token types) and turning
//! them into the same [`Vocab`] a `tokenizer.json` gives: token `i` of
//! `tokenizer.ggml.tokens` is id `i`; control and user-defined tokens are
//! stored as plain text, as llama.cpp prints them, so they are kept like
//! tokenizer.json `added_tokens`; the storage style follows
//! `tokenizer.ggml.model`. BERT vocabularies, which llama.cpp's converter
//! stores in "phantom space" form (`▁word` for a word start, `ing` for
//! `##ing`), are turned back into WordPiece form so entries read as they
//! do in the model's tokenizer.json. Encoding is rebuilt lazily by the
//! private `gguf_tokenizer` module from the [`Recipe`] kept here.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::OnceLock;

use candle_core::quantized::gguf_file::Value;

use super::entries::Entries;
use super::gguf_pre::whole_pieces_and_bos;
use super::readable::TokenStyle;
use super::{AddedToken, SpecialDecl, Vocab, normalize, parse};
use crate::error::{Error, Result};

/// The `source` of the [`SpecialDecl`]s a GGUF declares: the key prefix.
pub const GGUF_SOURCE: &str = "tokenizer.ggml";

/// The special-id keys of a GGUF, without the `tokenizer.ggml.` prefix and
/// `_token_id` suffix, with the role each declares (llama.cpp spells the
/// separator key `seperator`).
const ROLE_KEYS: [(&str, &str); 7] = [
    ("bos", "bos"),
    ("eos", "eos"),
    ("padding", "pad"),
    ("unknown", "unk"),
    ("mask", "mask"),
    ("seperator", "sep"),
    ("cls", "cls"),
];

/// A llama.cpp token type (`tokenizer.ggml.token_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TokenType {
    /// 0: not set by the converter.
    Undefined,
    /// 1: an ordinary entry.
    Normal,
    /// 2: the unknown token.
    Unknown,
    /// 3: a control token such as `<s>` or `<|eot_id|>`.
    Control,
    /// 4: a token added by the user, matched as plain text.
    UserDefined,
    /// 5: a reserved slot that is never produced.
    Unused,
    /// 6: a single byte such as `<0x0A>` (SentencePiece byte fallback).
    Byte,
}

impl TokenType {
    /// The kind of a `token_type` value, if it is one of the seven (the
    /// numbers of SentencePiece's piece types, which llama.cpp took).
    pub(crate) fn from_code(code: i64) -> Option<TokenType> {
        Some(match code {
            0 => TokenType::Undefined,
            1 => TokenType::Normal,
            2 => TokenType::Unknown,
            3 => TokenType::Control,
            4 => TokenType::UserDefined,
            5 => TokenType::Unused,
            6 => TokenType::Byte,
            _ => return None,
        })
    }
}

/// What encoding needs beyond the token table, kept from the metadata so
/// the tokenizer can be built on the first [`Vocab::encode`].
#[derive(Debug)]
pub(crate) struct Recipe {
    /// `tokenizer.ggml.model`.
    pub model: String,
    /// `tokenizer.ggml.pre`, the BPE pre-tokenizer name.
    pub pre: Option<String>,
    /// `tokenizer.ggml.merges`, each `"left right"`.
    pub merges: Vec<String>,
    /// `tokenizer.ggml.scores`, one per token.
    pub scores: Option<Vec<f32>>,
    /// Declared special ids by role (`bos`, `eos`, `unk`, `sep`, ...).
    pub ids: Vec<(&'static str, i64)>,
    /// Whether encoding starts with the bos token.
    pub add_bos: bool,
    /// Whether encoding ends with the eos token.
    pub add_eos: bool,
    /// Whether encoding ends with the separator token (BERT).
    pub add_sep: bool,
    /// Whether SentencePiece text gets a leading `▁`.
    pub add_space_prefix: bool,
}

impl Recipe {
    /// The declared id of `role`, if any.
    pub fn id(&self, role: &str) -> Option<i64> {
        self.ids.iter().find(|(r, _)| *r == role).map(|&(_, id)| id)
    }
}

/// Typed access to the metadata, every error naming the file and key.
struct Meta<'a> {
    file: &'a Path,
    map: &'a HashMap<String, Value>,
}

impl<'a> Meta<'a> {
    fn error(&self, key: &str, msg: impl std::fmt::Display) -> Error {
        Error::bad_file(self.file, format!("metadata `{key}` {msg}"))
    }

    fn string(&self, key: &str) -> Result<Option<&'a str>> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(self.error(key, format!("is {}, expected a string", type_name(v)))),
        }
    }

    fn boolean(&self, key: &str) -> Result<Option<bool>> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(self.error(key, format!("is {}, expected a bool", type_name(v)))),
        }
    }

    fn integer(&self, key: &str) -> Result<Option<i64>> {
        match self.map.get(key) {
            None => Ok(None),
            Some(v) => match integer(v) {
                Some(i) => Ok(Some(i)),
                None => Err(self.error(key, format!("is {}, expected an integer", type_name(v)))),
            },
        }
    }

    /// An array of `len` entries (when given), each read by `item`, which
    /// names what it expects when it returns `None`.
    fn array<T>(
        &self,
        key: &str,
        len: Option<usize>,
        expected: &str,
        item: impl Fn(&'a Value) -> Option<T>,
    ) -> Result<Option<Vec<T>>> {
        let values = match self.map.get(key) {
            None => return Ok(None),
            Some(Value::Array(values)) => values,
            Some(v) => {
                return Err(self.error(key, format!("is {}, expected an array", type_name(v))));
            }
        };
        if let Some(len) = len
            && values.len() != len
        {
            return Err(self.error(
                key,
                format!(
                    "has {} entries, expected {len} (one per token of `tokenizer.ggml.tokens`)",
                    values.len()
                ),
            ));
        }
        values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                item(v).ok_or_else(|| {
                    self.error(
                        key,
                        format!("entry {i} is {}, expected {expected}", describe(v)),
                    )
                })
            })
            .collect::<Result<Vec<T>>>()
            .map(Some)
    }
}

/// An integer of any width, if it fits an i64.
fn integer(v: &Value) -> Option<i64> {
    match *v {
        Value::U8(x) => Some(x.into()),
        Value::I8(x) => Some(x.into()),
        Value::U16(x) => Some(x.into()),
        Value::I16(x) => Some(x.into()),
        Value::U32(x) => Some(x.into()),
        Value::I32(x) => Some(x.into()),
        Value::U64(x) => i64::try_from(x).ok(),
        Value::I64(x) => Some(x),
        _ => None,
    }
}

/// How a value is named in an error: `a u32`, `a string`, `an array`.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::U8(_) => "a u8",
        Value::I8(_) => "an i8",
        Value::U16(_) => "a u16",
        Value::I16(_) => "an i16",
        Value::U32(_) => "a u32",
        Value::I32(_) => "an i32",
        Value::U64(_) => "a u64",
        Value::I64(_) => "an i64",
        Value::F32(_) => "an f32",
        Value::F64(_) => "an f64",
        Value::Bool(_) => "a bool",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
    }
}

/// An array entry in an error: its type and, for an integer or a string,
/// its value (an out-of-range token type or a bad merge says which).
fn describe(v: &Value) -> String {
    match (integer(v), v) {
        (Some(i), _) => format!("{} {i}", type_name(v)),
        (None, Value::String(s)) if s.chars().count() <= 40 => format!("{s:?}"),
        _ => type_name(v).to_string(),
    }
}

/// The WordPiece form of an entry of a phantom-space BERT vocabulary: the
/// inverse of llama.cpp's converter, which keeps `[CLS]`-style entries,
/// turns `##ing` into `ing` and `word` into `▁word`.
fn unphantom(token: &str) -> String {
    if token.starts_with('[') && token.ends_with(']') {
        token.to_string()
    } else if let Some(word) = token.strip_prefix('▁') {
        word.to_string()
    } else {
        format!("##{token}")
    }
}

impl Vocab {
    /// Builds the vocabulary of the GGUF file `path` from its parsed
    /// `metadata`: `Ok(None)` when there is no `tokenizer.ggml.tokens`.
    /// Every key read is validated (type, one entry per token, token types
    /// 0 to 6); a bad one is an error naming the file and key. Special ids
    /// are not checked against the vocabulary here: `check` reports them.
    pub fn from_gguf(path: &Path, metadata: &HashMap<String, Value>) -> Result<Option<Vocab>> {
        let meta = Meta {
            file: path,
            map: metadata,
        };
        let Some(tokens) = meta.array("tokenizer.ggml.tokens", None, "a string", |v| match v {
            Value::String(s) => Some(s.as_str()),
            _ => None,
        })?
        else {
            return Ok(None);
        };
        let n = tokens.len();
        if n > parse::MAX_ID as usize {
            return Err(meta.error(
                "tokenizer.ggml.tokens",
                format!("has {n} entries, more than the limit of {}", parse::MAX_ID),
            ));
        }
        let model = meta
            .string("tokenizer.ggml.model")?
            .unwrap_or("(not set)")
            .to_string();
        let kinds = meta
            .array(
                "tokenizer.ggml.token_type",
                Some(n),
                "a token type 0 to 6",
                |v| integer(v).and_then(TokenType::from_code),
            )?
            .unwrap_or_default();
        let scores = meta.array("tokenizer.ggml.scores", Some(n), "a float", |v| match *v {
            Value::F32(x) => Some(x),
            Value::F64(x) => Some(x as f32),
            _ => None,
        })?;
        let merges = meta
            .array(
                "tokenizer.ggml.merges",
                None,
                "two tokens joined by a space",
                |v| match v {
                    Value::String(s) if s.contains(' ') => Some(s.clone()),
                    _ => None,
                },
            )?
            .unwrap_or_default();
        let mut ids = Vec::new();
        for (key, role) in ROLE_KEYS {
            if let Some(id) = meta.integer(&format!("tokenizer.ggml.{key}_token_id"))? {
                ids.push((role, id));
            }
        }
        let style = match model.as_str() {
            "gpt2" => TokenStyle::ByteLevel,
            "llama" | "t5" => TokenStyle::Metaspace { replacement: '▁' },
            "bert" => TokenStyle::WordPiece {
                prefix: "##".to_string(),
            },
            _ => TokenStyle::Plain,
        };
        let phantom = model == "bert" && is_phantom(&tokens, &kinds);
        let table = Table::new(tokens, &kinds, phantom);
        let mut special_ids = table.special_ids;
        special_ids.extend(ids.iter().filter_map(|&(_, id)| u32::try_from(id).ok()));
        let decls = ids
            .iter()
            .map(|&(role, id)| SpecialDecl {
                source: GGUF_SOURCE.to_string(),
                role: role.to_string(),
                id: Some(id),
                token: None,
            })
            .collect();

        let pre = meta.string("tokenizer.ggml.pre")?;
        // llama.cpp's defaults per model, which the file's keys override.
        let (add_bos, add_eos, add_sep, add_space_prefix) = match model.as_str() {
            "llama" => (true, false, false, true),
            "bert" => (true, false, true, false),
            "t5" => (false, true, false, true),
            "gpt2" => (pre.is_some_and(whole_pieces_and_bos), false, false, false),
            _ => (false, false, false, false),
        };
        let flag = |key: &str, default: bool| -> Result<bool> {
            Ok(meta
                .boolean(&format!("tokenizer.ggml.{key}"))?
                .unwrap_or(default))
        };
        let recipe = Recipe {
            model: model.clone(),
            pre: pre.map(str::to_string),
            merges,
            scores,
            ids,
            add_bos: flag("add_bos_token", add_bos)?,
            add_eos: flag("add_eos_token", add_eos)?,
            add_sep: flag("add_sep_token", add_sep)?,
            add_space_prefix: flag("add_space_prefix", add_space_prefix)?,
        };

        Ok(Some(Vocab {
            file: path.to_path_buf(),
            normalizer: normalize::gguf_normalizer(&model),
            words: OnceLock::new(),
            model,
            style,
            by_id: (0..n as u32).collect(),
            shadowed: Vec::new(),
            entries: table.entries,
            by_token: OnceLock::new(),
            scans: Default::default(),
            added: table.added,
            special_ids,
            decls,
            config_added: Vec::new(),
            unreadable: Vec::new(),
            merge_prefix: String::new(),
            kinds,
            gguf: Some(Box::new(recipe)),
            source: None,
            made: None,
            tokenizer: OnceLock::new(),
        }))
    }

    /// The llama.cpp token type of `id`, for a GGUF vocabulary that declares
    /// them (`None` for tokenizer.json vocabularies and ids out of range).
    pub fn token_type(&self, id: u32) -> Option<TokenType> {
        self.kinds.get(id as usize).copied()
    }

    /// Whether `id` is declared `unused` (GGUF token type 5): a reserved
    /// slot, reported by `check` like a placeholder entry.
    pub fn is_unused(&self, id: u32) -> bool {
        self.token_type(id) == Some(TokenType::Unused)
    }
}

/// The id-ordered entries of a GGUF vocabulary and what their types say.
struct Table {
    entries: Entries,
    /// Control and user-defined tokens, stored as plain text.
    added: Vec<AddedToken>,
    /// Control, user-defined and unknown tokens.
    special_ids: HashSet<u32>,
}

impl Table {
    /// Token `i` is id `i`; `phantom` BERT entries are turned back into
    /// WordPiece form.
    fn new(tokens: Vec<&str>, kinds: &[TokenType], phantom: bool) -> Table {
        let mut table = Table {
            entries: Entries::with_capacity(tokens.len(), tokens.iter().map(|t| t.len()).sum()),
            added: Vec::new(),
            special_ids: HashSet::new(),
        };
        for (id, token) in tokens.into_iter().enumerate() {
            let kind = kinds.get(id).copied().unwrap_or(TokenType::Normal);
            let id = id as u32;
            let added = matches!(kind, TokenType::Control | TokenType::UserDefined);
            let token = if phantom && kind == TokenType::Normal {
                unphantom(token)
            } else {
                token.to_string()
            };
            if added {
                table.added.push(AddedToken {
                    id,
                    content: token.clone(),
                    special: kind == TokenType::Control,
                });
            }
            if added || kind == TokenType::Unknown {
                table.special_ids.insert(id);
            }
            table.entries.push(&token, id, added);
        }
        table
    }
}

/// Whether a BERT vocabulary is in llama.cpp's phantom-space form: word
/// starts carry `▁` and no continuation carries `##`.
fn is_phantom(tokens: &[&str], kinds: &[TokenType]) -> bool {
    let normal = |i: &usize| kinds.get(*i).is_none_or(|k| *k == TokenType::Normal);
    let mut marked = false;
    for t in (0..tokens.len()).filter(normal).map(|i| tokens[i]) {
        if t.starts_with("##") && t.len() > 2 {
            return false;
        }
        marked |= t.starts_with('▁');
    }
    marked
}

#[cfg(test)]
#[path = "gguf_tests.rs"]
mod tests;
