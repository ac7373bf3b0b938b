//! What tokenizer_config.json and special_tokens_map.json say about a
//! download without a tokenizer.json: the converter's flags and counts,
//! and the special tokens by role as transformers 5 reads them.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::classes::Class;
use crate::error::{Error, Result};
use crate::vocab::special::{read_json_object, token_string};

/// The roles whose tokens a converted tokenizer adds as special tokens.
const ROLES: [&str; 7] = ["bos", "eos", "unk", "sep", "pad", "cls", "mask"];

/// What tokenizer_config.json and special_tokens_map.json say.
pub(super) struct Settings {
    /// tokenizer_config.json's path, for messages.
    pub path: PathBuf,
    /// tokenizer_config.json, when there is one.
    pub tok_config: Option<Map<String, Value>>,
    map_path: PathBuf,
    map: Option<Map<String, Value>>,
}

impl Settings {
    pub(super) fn read(dir: &Path) -> Result<Settings> {
        let path = dir.join("tokenizer_config.json");
        let map_path = dir.join("special_tokens_map.json");
        Ok(Settings {
            tok_config: read_json_object(&path)?,
            map: read_json_object(&map_path)?,
            path,
            map_path,
        })
    }

    /// The count `key` of tokenizer_config.json (a whole number up to
    /// `max`): `None` when absent or null.
    pub(super) fn count(&self, key: &str, max: u32) -> Result<Option<u32>> {
        match self.tok_config.as_ref().and_then(|m| m.get(key)) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .filter(|&n| n <= max)
                .map(Some)
                .ok_or_else(|| {
                    Error::bad_file(
                        &self.path,
                        format!("`{key}` is {v}, expected a count up to {max}"),
                    )
                }),
        }
    }

    /// The boolean `key` of tokenizer_config.json: `None` when absent or
    /// null.
    pub(super) fn flag(&self, key: &str) -> Result<Option<bool>> {
        match self.tok_config.as_ref().and_then(|m| m.get(key)) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(Error::bad_file(
                &self.path,
                format!("`{key}` is {other}, expected true, false or null"),
            )),
        }
    }

    /// The special tokens by role, as written (a string or an object with
    /// `content`), as transformers 5 reads them: tokenizer_config.json's,
    /// overridden by special_tokens_map.json's unless tokenizer_config.json
    /// has an `added_tokens_decoder` (then the map is not read), else the
    /// class's default. A role written as null has none.
    pub(super) fn roles(&self, class: Option<&Class>) -> Result<Vec<(&'static str, Value)>> {
        let map = match self.tok_config.as_ref() {
            Some(c) if c.contains_key("added_tokens_decoder") => &None,
            _ => &self.map,
        };
        let mut out = Vec::new();
        'roles: for role in ROLES {
            let key = format!("{role}_token");
            for (path, obj) in [(&self.map_path, map), (&self.path, &self.tok_config)] {
                if let Some(value) = obj.as_ref().and_then(|o| o.get(&key)) {
                    if token_string(path, &key, value)?.is_some() {
                        out.push((role, value.clone()));
                    }
                    continue 'roles;
                }
            }
            let default = class.and_then(|c| c.defaults.iter().find(|(r, _)| *r == role));
            out.extend(default.map(|(_, token)| (role, json!(token))));
        }
        Ok(out)
    }

    /// tokenizer_config.json's `extra_special_tokens` (transformers 5's
    /// name) or `additional_special_tokens`, when a list.
    pub(super) fn extra_special_tokens(&self) -> impl Iterator<Item = &Value> {
        let config = self.tok_config.as_ref();
        let list = ["extra_special_tokens", "additional_special_tokens"]
            .iter()
            .find_map(|key| config?.get(*key)?.as_array());
        list.into_iter().flatten()
    }
}

/// The string of a special token as declared (a string or an object with
/// `content`).
pub(super) fn token_of(value: &Value) -> Option<&str> {
    match value {
        Value::String(s) => Some(s),
        Value::Object(o) => o.get("content").and_then(Value::as_str),
        _ => None,
    }
}
