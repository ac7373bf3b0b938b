//! Special tokens as declared by every file beside the weights.
//!
//! Owns reading `generation_config.json`, `tokenizer_config.json` and
//! `special_tokens_map.json` (and the already parsed `config.json`) into
//! flat [`SpecialDecl`] records, so a checker can compare the sources with
//! each other and with the vocabulary. Nothing here judges consistency.

use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result};

/// The roles a special token can be declared for, in report order.
pub const ROLES: [&str; 8] = [
    "bos",
    "eos",
    "pad",
    "unk",
    "mask",
    "sep",
    "cls",
    "decoder_start",
];

/// Config files larger than this are refused (real ones are a few kB, a
/// tokenizer_config.json with chat templates some hundred kB).
const MAX_CONFIG_BYTES: u64 = 64 << 20;

/// One declaration of a special token by one file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SpecialDecl {
    /// The declaring file: `config.json`, `config.json:text_config`,
    /// `generation_config.json`, `tokenizer_config.json`,
    /// `special_tokens_map.json`, `tokenizer.json`, or for a vocabulary
    /// converted from older files `converted vocab.txt` (or `vocab.json`).
    pub source: String,
    /// One of [`ROLES`]; `"additional"` for an entry of
    /// `additional_special_tokens`; `"special"` for a `tokenizer.json` added
    /// token marked special (those carry no role).
    pub role: String,
    /// The id as written (config files may write negative ids such as -1).
    pub id: Option<i64>,
    /// The token string as written (tokenizer files declare strings).
    pub token: Option<String>,
}

/// What the config files beside a tokenizer declare.
#[derive(Debug, Default)]
pub(crate) struct Declared {
    /// Role declarations from every file, in file then [`ROLES`] order.
    pub decls: Vec<SpecialDecl>,
    /// `tokenizer_config.json` `added_tokens_decoder`: id, content, special.
    pub config_added: Vec<(u32, String, bool)>,
    /// The files that could not be read, each error naming its file: they
    /// declare nothing here, so that one broken file blocks nothing else.
    pub unreadable: Vec<Error>,
}

/// Reads a JSON object file; `Ok(None)` when it does not exist.
pub(crate) fn read_json_object(path: &Path) -> Result<Option<serde_json::Map<String, Value>>> {
    let Some(meta) = crate::regular_file::found(path, "a JSON file")? else {
        return Ok(None);
    };
    super::parse::check_size(path, meta.len(), MAX_CONFIG_BYTES)?;
    let bytes = std::fs::read(path).map_err(|err| Error::io(path, err))?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(other) => Err(Error::bad_file(
            path,
            format!("expected a JSON object, found {}", kind(&other)),
        )),
        Err(err) => Err(Error::bad_file(path, format!("not valid JSON: {err}"))),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Collects the declarations of `config` (the parsed `config.json`, and its
/// `text_config`) and of the optional files in `dir`. A missing file is
/// skipped; a malformed one too, its error kept in
/// [`Declared::unreadable`].
pub(crate) fn collect(dir: &Path, config: Option<&Value>) -> Declared {
    let config_ids = |d: &mut Declared| -> Result<()> {
        let Some(Value::Object(config)) = config else {
            return Ok(());
        };
        let path = dir.join("config.json");
        ids_from(&path, "config.json", config, &mut d.decls)?;
        if let Some(Value::Object(text)) = config.get("text_config") {
            ids_from(&path, "config.json:text_config", text, &mut d.decls)?;
        }
        Ok(())
    };
    let reads = [
        declared(config_ids),
        from_file(dir, "generation_config.json", |path, obj, d| {
            ids_from(path, "generation_config.json", obj, &mut d.decls)
        }),
        from_file(dir, "tokenizer_config.json", |path, obj, d| {
            tokens_from(path, "tokenizer_config.json", obj, &mut d.decls)?;
            d.config_added = added_tokens_decoder(path, obj)?;
            Ok(())
        }),
        from_file(dir, "special_tokens_map.json", |path, obj, d| {
            tokens_from(path, "special_tokens_map.json", obj, &mut d.decls)
        }),
    ];
    let mut out = Declared::default();
    for read in reads {
        match read {
            Ok(d) => {
                out.decls.extend(d.decls);
                out.config_added.extend(d.config_added);
            }
            Err(e) => out.unreadable.push(e),
        }
    }
    out
}

/// What `read` declares, all of it or (on an error) nothing.
fn declared(read: impl FnOnce(&mut Declared) -> Result<()>) -> Result<Declared> {
    let mut d = Declared::default();
    read(&mut d)?;
    Ok(d)
}

/// What `read` finds in the JSON object file `dir/name` (nothing when
/// there is no such file).
fn from_file(
    dir: &Path,
    name: &str,
    read: impl FnOnce(&Path, &serde_json::Map<String, Value>, &mut Declared) -> Result<()>,
) -> Result<Declared> {
    let path = dir.join(name);
    declared(|d| match read_json_object(&path)? {
        Some(obj) => read(&path, &obj, d),
        None => Ok(()),
    })
}

/// `{role}_token_id` keys: an integer, a list of integers, or null.
fn ids_from(
    path: &Path,
    source: &str,
    obj: &serde_json::Map<String, Value>,
    decls: &mut Vec<SpecialDecl>,
) -> Result<()> {
    for role in ROLES {
        let key = format!("{role}_token_id");
        let Some(value) = obj.get(&key) else { continue };
        let bad = |v: &Value| {
            Error::bad_file(
                path,
                format!(
                    "`{key}` is {}, expected an integer, a list of integers or null",
                    kind(v)
                ),
            )
        };
        let mut push = |v: &Value| -> Result<()> {
            match v {
                Value::Null => Ok(()),
                Value::Number(n) => {
                    let id = n.as_i64().ok_or_else(|| {
                        Error::bad_file(path, format!("`{key}` is {n}, expected an integer id"))
                    })?;
                    decls.push(SpecialDecl {
                        source: source.to_string(),
                        role: role.to_string(),
                        id: Some(id),
                        token: None,
                    });
                    Ok(())
                }
                other => Err(bad(other)),
            }
        };
        match value {
            Value::Array(items) => items.iter().try_for_each(&mut push)?,
            other => push(other)?,
        }
    }
    Ok(())
}

/// A token written as a string or as an `{"content": ...}` object.
pub(crate) fn token_string<'a>(
    path: &Path,
    key: &str,
    value: &'a Value,
) -> Result<Option<&'a str>> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s)),
        Value::Object(obj) => match obj.get("content") {
            Some(Value::String(s)) => Ok(Some(s)),
            _ => Err(Error::bad_file(
                path,
                format!("`{key}` is an object without a string `content`"),
            )),
        },
        other => Err(Error::bad_file(
            path,
            format!(
                "`{key}` is {}, expected a string, an object with `content` or null",
                kind(other)
            ),
        )),
    }
}

/// `{role}_token` keys (no file declares `decoder_start_token`, the key is
/// read all the same), then `additional_special_tokens`.
fn tokens_from(
    path: &Path,
    source: &str,
    obj: &serde_json::Map<String, Value>,
    decls: &mut Vec<SpecialDecl>,
) -> Result<()> {
    for role in ROLES {
        let key = format!("{role}_token");
        let Some(value) = obj.get(&key) else { continue };
        if let Some(token) = token_string(path, &key, value)? {
            decls.push(SpecialDecl {
                source: source.to_string(),
                role: role.to_string(),
                id: None,
                token: Some(token.to_string()),
            });
        }
    }
    let key = "additional_special_tokens";
    match obj.get(key) {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                if let Some(token) = token_string(path, &format!("{key}[{i}]"), item)? {
                    decls.push(SpecialDecl {
                        source: source.to_string(),
                        role: "additional".to_string(),
                        id: None,
                        token: Some(token.to_string()),
                    });
                }
            }
        }
        Some(other) => {
            return Err(Error::bad_file(
                path,
                format!("`{key}` is {}, expected a list of tokens", kind(other)),
            ));
        }
    }
    Ok(())
}

/// `key` read as transformers reads an `added_tokens_decoder` key, with
/// Python's `int()`: surrounding whitespace, a `+`, leading zeros and
/// single underscores between digits allowed (` 4`, `+4`, `004`, `1_000`).
/// `None` for anything else, and for what `int()` reads but is no `u32`
/// id: a negative number, one past `u32::MAX`, digits of other scripts.
fn python_uint(key: &str) -> Option<u32> {
    let t = key.trim();
    let digits = t.strip_prefix('+').unwrap_or(t);
    let ok = !digits.is_empty()
        && digits
            .split('_')
            .all(|run| !run.is_empty() && run.bytes().all(|b| b.is_ascii_digit()));
    if !ok {
        return None;
    }
    digits.replace('_', "").parse().ok()
}

/// `added_tokens_decoder`: a map of id strings to `{content, special}`.
pub(crate) fn added_tokens_decoder(
    path: &Path,
    obj: &serde_json::Map<String, Value>,
) -> Result<Vec<(u32, String, bool)>> {
    let map = match obj.get("added_tokens_decoder") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err(Error::bad_file(
                path,
                format!(
                    "`added_tokens_decoder` is {}, expected an object",
                    kind(other)
                ),
            ));
        }
    };
    let mut out = Vec::with_capacity(map.len());
    for (key, value) in map {
        let id = python_uint(key).ok_or_else(|| {
            Error::bad_file(
                path,
                format!(
                    "`added_tokens_decoder` key {key:?} is not a token id (expected a whole number from 0 to {})",
                    u32::MAX
                ),
            )
        })?;
        let entry = format!("added_tokens_decoder[{key}]");
        let content = token_string(path, &entry, value)?.ok_or_else(|| {
            Error::bad_file(path, format!("`{entry}` is null, expected an object"))
        })?;
        let special = match value.get("special") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                return Err(Error::bad_file(
                    path,
                    format!("`{entry}.special` is {}, expected a boolean", kind(other)),
                ));
            }
        };
        out.push((id, content.to_string(), special));
    }
    out.sort_by_key(|(id, _, _)| *id);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::python_uint;

    #[test]
    fn added_tokens_decoder_keys_are_read_as_python_reads_them() {
        for (key, id) in [
            ("4", 4),
            (" 4\n", 4),
            ("+5", 5),
            ("006", 6),
            ("1_000", 1000),
        ] {
            assert_eq!(python_uint(key), Some(id), "{key:?}");
        }
        assert_eq!(python_uint("4294967295"), Some(u32::MAX));
        for key in [
            "",
            " ",
            "+",
            "-1",
            "1__0",
            "_1",
            "1_",
            "0x10",
            "1.0",
            "4294967296",
            "٤",
        ] {
            assert_eq!(python_uint(key), None, "{key:?}");
        }
    }
}
