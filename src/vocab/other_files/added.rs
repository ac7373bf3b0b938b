//! The added tokens of the tokenizer.json made from older files: from
//! tokenizer_config.json's `added_tokens_decoder`, added_tokens.json and
//! the declared special tokens, each content once, as transformers adds
//! them.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::path::Path;

use serde_json::{Map, Value, json};

use super::settings::token_of;
use crate::error::{Error, Result};
use crate::vocab::parse;
use crate::vocab::special::{added_tokens_decoder, read_json_object};

/// The added tokens of the converted tokenizer, by content.
#[derive(Default)]
pub(super) struct Added {
    tokens: Vec<(u32, Map<String, Value>)>,
    /// Content → id of `tokens`.
    ids: HashMap<String, u32>,
}

impl Added {
    pub(super) fn id(&self, content: &str) -> Option<u32> {
        self.ids.get(content).copied()
    }

    /// Adds a token unless one with its content is there.
    pub(super) fn push(
        &mut self,
        id: u32,
        content: &str,
        special: bool,
        flags: Option<&Map<String, Value>>,
    ) {
        match self.ids.entry(content.to_string()) {
            Entry::Occupied(_) => return,
            Entry::Vacant(slot) => slot.insert(id),
        };
        let flag = |key: &str, default: bool| {
            json!(
                flags
                    .and_then(|f| f.get(key))
                    .and_then(Value::as_bool)
                    .unwrap_or(default)
            )
        };
        let mut token = Map::new();
        token.insert("content".into(), json!(content));
        token.insert("single_word".into(), flag("single_word", false));
        token.insert("lstrip".into(), flag("lstrip", false));
        token.insert("rstrip".into(), flag("rstrip", false));
        token.insert("normalized".into(), flag("normalized", !special));
        token.insert("special".into(), json!(special));
        self.tokens.push((id, token));
    }

    /// [`Added::push`] for a token of `path`, whose id must be below the
    /// dense table's limit.
    pub(super) fn push_from(
        &mut self,
        path: &Path,
        id: u32,
        content: &str,
        special: bool,
        flags: Option<&Map<String, Value>>,
    ) -> Result<()> {
        if id >= parse::MAX_ID {
            return Err(Error::bad_file(
                path,
                format!(
                    "token {content:?} has id {id}, beyond the limit of {}",
                    parse::MAX_ID
                ),
            ));
        }
        self.push(id, content, special, flags);
        Ok(())
    }

    /// tokenizer_config.json's `added_tokens_decoder` (id → token object).
    pub(super) fn add_decoder_tokens(
        &mut self,
        path: &Path,
        config: &Map<String, Value>,
    ) -> Result<()> {
        for (id, content, special) in added_tokens_decoder(path, config)? {
            let flags = (config.get("added_tokens_decoder"))
                .and_then(|d| d.get(id.to_string()))
                .and_then(Value::as_object);
            self.push_from(path, id, &content, special, flags)?;
        }
        Ok(())
    }

    /// added_tokens.json (token → id), special when `is_special` says so;
    /// whether there is one.
    pub(super) fn add_file_tokens(
        &mut self,
        path: &Path,
        is_special: impl Fn(&str) -> bool,
    ) -> Result<bool> {
        let Some(map) = read_json_object(path)? else {
            return Ok(false);
        };
        for (content, id) in &map {
            let id = id
                .as_u64()
                .and_then(|id| u32::try_from(id).ok())
                .ok_or_else(|| {
                    Error::bad_file(
                        path,
                        format!("{content:?} has id {id}, expected a token id"),
                    )
                })?;
            self.push_from(path, id, content, is_special(content), None)?;
        }
        Ok(true)
    }

    /// One past the highest id added so far (0 when none).
    pub(super) fn end(&self) -> u32 {
        self.tokens.iter().map(|(id, _)| id + 1).max().unwrap_or(0)
    }

    /// A special token declared by a role or in `extra_special_tokens`:
    /// at its vocabulary id, or at `next` (then incremented) when the
    /// vocabulary lacks it, as transformers adds it (`check` then reports
    /// an id past the matrix).
    pub(super) fn special(&mut self, value: &Value, index: &HashMap<&str, u32>, next: &mut u32) {
        let Some(content) = token_of(value) else {
            return;
        };
        if self.id(content).is_some() {
            return;
        }
        let id = index.get(content).copied().unwrap_or_else(|| {
            *next += 1;
            *next - 1
        });
        self.push(id, content, true, value.as_object());
    }

    pub(super) fn into_json(mut self) -> Value {
        self.tokens.sort_by_key(|(id, _)| *id);
        Value::Array(
            self.tokens
                .into_iter()
                .map(|(id, mut token)| {
                    token.insert("id".into(), json!(id));
                    Value::Object(token)
                })
                .collect(),
        )
    }
}
