//! Chat templates: where a download keeps them, and rendering one on a
//! sample conversation.
//!
//! A template is read from every place `transformers` and llama.cpp write
//! one: `chat_template.jinja` and `chat_template.json` beside the
//! tokenizer, `chat_template` in `tokenizer_config.json` (a string, or a
//! list of `{"name", "template"}`), and a GGUF file's
//! `tokenizer.chat_template` (with `tokenizer.chat_template.NAME` for
//! named ones). The template a user trains with is often another model's,
//! so [`from_file`] reads one from a `.jinja` file or a JSON file too.
//!
//! Rendering uses minijinja as `transformers` configures Jinja for these
//! templates (`trim_blocks`, `lstrip_blocks`, Python's string and dict
//! methods, `raise_exception`, `strftime_now`), with the special-token
//! strings as `bos_token`, `eos_token`, ... The templates are untrusted:
//! the text is capped at [`MAX_TEMPLATE_BYTES`], a render at [`FUEL`]
//! instructions and [`RECURSION`] levels, and its output at
//! [`MAX_OUTPUT_BYTES`], so a template that loops, recurses or grows
//! fails with a message instead of hanging. What a render allocates is
//! bounded by [`MAX_RENDER_HELD`] and [`MAX_RENDER_ASKED`]: past it the process stops with a
//! one-line error (exit 2), as an allocation that fails cannot be turned
//! into a message.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use candle_core::quantized::gguf_file::Value as GgufValue;
use minijinja::{Environment, ErrorKind};
use serde_json::Value;

use super::special::{ROLES, read_json_object, token_string};
use crate::error::{Error, Result};

/// Templates larger than this are not rendered: real ones are some kB
/// (tool-calling ones up to about 20 kB).
pub const MAX_TEMPLATE_BYTES: usize = 1 << 20;

/// Instructions one render may run: a real template renders the sample
/// conversation in a few thousand.
pub const FUEL: u64 = 2_000_000;

/// Nesting (loops, conditions, macro calls) one render may reach.
pub const RECURSION: usize = 64;

/// Bytes a render may produce: the sample conversation renders to well
/// under a kB.
pub const MAX_OUTPUT_BYTES: usize = 1 << 20;

/// Bytes a render may hold allocated at once (see `alloc_budget`): a
/// real template holds some kB rendering a conversation; one that
/// doubles a string in a loop is stopped here.
pub const MAX_RENDER_HELD: usize = 256 << 20;

/// Bytes a render may ask for in all, freed or not: a loop copying a
/// large string is stopped here, after a second or so of copying, while
/// fuel still bounds loops that allocate little.
pub const MAX_RENDER_ASKED: usize = 4 << 30;

/// The date `strftime_now` gives, fixed so that a render does not depend
/// on the day it runs: 26 July 2024, as Llama 3.1's template defaults to.
const DATE: (i32, u32, u32) = (2024, 7, 26);

/// One chat template and where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatTemplate {
    /// The file (or GGUF key) it was read from.
    pub origin: String,
    /// Its name, for one of a list of named templates.
    pub name: Option<String>,
    /// The Jinja source.
    pub text: String,
}

impl ChatTemplate {
    /// `tokenizer_config.json` or `tokenizer_config.json (tool_use)`.
    pub fn label(&self) -> String {
        match &self.name {
            Some(n) => format!("{} ({n})", self.origin),
            None => self.origin.clone(),
        }
    }
}

/// The special-token strings a template may name, by variable
/// (`bos_token` → `<s>`).
pub type TemplateTokens = BTreeMap<String, String>;

/// The templates in the files of `dir`, in the order `transformers`
/// prefers them (`chat_template.jinja`, `chat_template.json`,
/// `tokenizer_config.json`), with the special-token strings
/// `tokenizer_config.json` declares. A file that is missing gives none;
/// one that cannot be read is an error naming it.
pub fn in_dir(dir: &Path) -> Result<(Vec<ChatTemplate>, TemplateTokens)> {
    let mut found = Vec::new();
    let jinja = dir.join("chat_template.jinja");
    if let Some(text) = read_text(&jinja)? {
        found.push(ChatTemplate {
            origin: "chat_template.jinja".into(),
            name: None,
            text,
        });
    }
    let json = dir.join("chat_template.json");
    if let Some(obj) = read_json_object(&json)? {
        found.extend(from_object(&json, "chat_template.json", &obj)?);
    }
    let config = dir.join("tokenizer_config.json");
    let mut tokens = TemplateTokens::new();
    if let Some(obj) = read_json_object(&config)? {
        found.extend(from_object(&config, "tokenizer_config.json", &obj)?);
        tokens = tokens_of(&config, &obj)?;
    }
    Ok((found, tokens))
}

/// The templates of a GGUF file's metadata: `tokenizer.chat_template`,
/// then the named ones (`tokenizer.chat_template.NAME`), by name. Values
/// that are not strings are left out.
pub fn in_gguf(metadata: &HashMap<String, GgufValue>) -> Vec<ChatTemplate> {
    const KEY: &str = "tokenizer.chat_template";
    let mut named: Vec<(&str, &str)> = metadata
        .iter()
        .filter_map(|(k, v)| {
            let name = match k.strip_prefix(KEY)? {
                "" => "",
                rest => rest.strip_prefix('.')?,
            };
            match v {
                GgufValue::String(s) => Some((name, s.as_str())),
                _ => None,
            }
        })
        .collect();
    named.sort();
    named
        .into_iter()
        .map(|(name, text)| ChatTemplate {
            origin: format!("GGUF {KEY}"),
            name: (!name.is_empty()).then(|| name.to_string()),
            text: text.to_string(),
        })
        .collect()
}

/// The templates of a file a user names: a JSON object (a
/// `tokenizer_config.json` or `chat_template.json`: its `chat_template`,
/// with the special tokens it declares), or else the file's text as one
/// template (a `.jinja` file).
pub fn from_file(path: &Path) -> Result<(Vec<ChatTemplate>, TemplateTokens)> {
    let Some(text) = read_text(path)? else {
        return Err(Error::bad_file(path, "no such file"));
    };
    let origin = path.display().to_string();
    // A Jinja template may open with `{{` or `{%`; `{"` opens JSON.
    let json = text.trim_start().strip_prefix('{');
    if json.is_some_and(|rest| rest.trim_start().starts_with(['"', '}'])) {
        let obj = match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(obj)) => obj,
            _ => {
                return Err(Error::bad_file(
                    path,
                    "expected a JSON object or a Jinja template",
                ));
            }
        };
        let found = from_object(path, &origin, &obj)?;
        if found.is_empty() {
            return Err(Error::bad_file(
                path,
                "expected a `chat_template` key in this JSON object",
            ));
        }
        return Ok((found, tokens_of(path, &obj)?));
    }
    Ok((
        vec![ChatTemplate {
            origin,
            name: None,
            text,
        }],
        TemplateTokens::new(),
    ))
}

/// A text file of at most [`MAX_TEMPLATE_BYTES`]; `None` when missing.
fn read_text(path: &Path) -> Result<Option<String>> {
    let Some(meta) = crate::regular_file::found(path, "a chat template file")? else {
        return Ok(None);
    };
    if meta.len() > MAX_TEMPLATE_BYTES as u64 {
        return Err(Error::bad_file(
            path,
            format!(
                "{} bytes, more than the {MAX_TEMPLATE_BYTES} a chat template may have",
                meta.len()
            ),
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| Error::bad_file(path, "expected UTF-8 text"))
}

/// `chat_template` of a JSON object: a string, or a list of named ones.
fn from_object(
    path: &Path,
    origin: &str,
    obj: &serde_json::Map<String, Value>,
) -> Result<Vec<ChatTemplate>> {
    let one = |name: Option<String>, text: &str| ChatTemplate {
        origin: origin.to_string(),
        name,
        text: text.to_string(),
    };
    match obj.get("chat_template") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![one(None, s)]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match (item.get("name"), item.get("template")) {
                (Some(Value::String(n)), Some(Value::String(t))) => Ok(one(Some(n.clone()), t)),
                _ => Err(Error::bad_file(
                    path,
                    "`chat_template` lists an entry without a string `name` and `template`",
                )),
            })
            .collect(),
        Some(_) => Err(Error::bad_file(
            path,
            "`chat_template` is neither a string nor a list of named templates",
        )),
    }
}

/// The `{role}_token` strings of a tokenizer config, by variable name.
fn tokens_of(path: &Path, obj: &serde_json::Map<String, Value>) -> Result<TemplateTokens> {
    let mut tokens = TemplateTokens::new();
    for role in ROLES {
        let key = format!("{role}_token");
        if let Some(v) = obj.get(&key)
            && let Some(s) = token_string(path, &key, v)?
        {
            tokens.insert(key, s.to_string());
        }
    }
    Ok(tokens)
}

/// One turn of a conversation to render.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: &'static str,
    /// What it says.
    pub content: String,
}

/// Why a template did not render: one line, with the template line when
/// minijinja knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderFailure(pub String);

/// Renders `template` on `messages` with the special-token strings
/// `tokens`, `tools` none, and `add_generation_prompt`, within the limits
/// of this module.
pub fn render(
    template: &ChatTemplate,
    tokens: &TemplateTokens,
    messages: &[Message],
    add_generation_prompt: bool,
) -> std::result::Result<String, RenderFailure> {
    Renderer::new(template, tokens)?.render(messages, add_generation_prompt)
}

/// A template compiled once, to render many conversations (the
/// `messages` lines of a data set).
pub struct Renderer<'a> {
    env: Environment<'a>,
    tokens: BTreeMap<String, minijinja::Value>,
    /// The line printed if a render allocates past its bound.
    refusal: String,
}

impl<'a> Renderer<'a> {
    /// Compiles `template`, which will name the strings of `tokens`.
    pub fn new(
        template: &'a ChatTemplate,
        tokens: &TemplateTokens,
    ) -> std::result::Result<Self, RenderFailure> {
        if template.text.len() > MAX_TEMPLATE_BYTES {
            return Err(RenderFailure(format!(
                "{} bytes, more than the {MAX_TEMPLATE_BYTES} a chat template may have",
                template.text.len()
            )));
        }
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_fuel(Some(FUEL));
        env.set_recursion_limit(RECURSION);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function(
            "raise_exception",
            |msg: String| -> std::result::Result<String, minijinja::Error> {
                Err(minijinja::Error::new(ErrorKind::InvalidOperation, msg))
            },
        );
        env.add_function("strftime_now", |format: String| strftime(&format));
        env.add_template("chat", &template.text).map_err(failed)?;
        let tokens = tokens
            .iter()
            .map(|(k, v)| (k.clone(), minijinja::Value::from(v.as_str())))
            .collect();
        let refusal = format!(
            "chat template `{}` allocates more than {} MiB at once or {} GiB in all rendering a conversation (real ones use some kB); refused",
            template.label(),
            MAX_RENDER_HELD >> 20,
            MAX_RENDER_ASKED >> 30
        );
        Ok(Renderer {
            env,
            tokens,
            refusal,
        })
    }

    /// Renders `messages` (anything that serialises as a list of
    /// messages), with `add_generation_prompt`.
    pub fn render(
        &self,
        messages: &(impl serde::Serialize + ?Sized),
        add_generation_prompt: bool,
    ) -> std::result::Result<String, RenderFailure> {
        let compiled = self.env.get_template("chat").map_err(failed)?;
        let mut ctx = self.tokens.clone();
        ctx.insert(
            "messages".into(),
            minijinja::Value::from_serialize(messages),
        );
        ctx.insert(
            "add_generation_prompt".into(),
            minijinja::Value::from(add_generation_prompt),
        );
        ctx.insert("tools".into(), minijinja::Value::from(()));
        let mut out = Capped(Vec::new());
        let rendered =
            crate::alloc_budget::within(MAX_RENDER_HELD, MAX_RENDER_ASKED, &self.refusal, || {
                compiled.render_captured_to(ctx, &mut out).map(drop)
            });
        rendered.map_err(|e| match out.0.len() >= MAX_OUTPUT_BYTES {
            true => RenderFailure(format!("the output grows past {MAX_OUTPUT_BYTES} bytes")),
            false => failed(e),
        })?;
        String::from_utf8(out.0).map_err(|_| RenderFailure("the output is not UTF-8".into()))
    }
}

/// A minijinja error on one line, with the template line when known.
fn failed(e: minijinja::Error) -> RenderFailure {
    let what = e
        .detail()
        .map_or_else(|| e.kind().to_string(), str::to_string);
    RenderFailure(match e.line() {
        Some(line) => format!("{} at line {line}", one_line(&what)),
        None => one_line(&what),
    })
}

/// An output buffer that refuses bytes past [`MAX_OUTPUT_BYTES`].
struct Capped(Vec<u8>);

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.0.len() + buf.len() > MAX_OUTPUT_BYTES {
            self.0.resize(MAX_OUTPUT_BYTES, 0);
            return Err(std::io::Error::other("output too large"));
        }
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// [`DATE`] in a C `strftime` format: the date and name directives; the
/// time of day is midnight.
fn strftime(format: &str) -> String {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let (y, m, d) = DATE;
    let month = MONTHS[m as usize - 1];
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('Y') => out.push_str(&y.to_string()),
            Some('y') => out.push_str(&format!("{:02}", y % 100)),
            Some('m') => out.push_str(&format!("{m:02}")),
            Some('d') => out.push_str(&format!("{d:02}")),
            Some('e') => out.push_str(&format!("{d:2}")),
            Some('B') => out.push_str(month),
            Some('b') | Some('h') => out.push_str(&month[..3]),
            Some('A') => out.push_str("Friday"),
            Some('a') => out.push_str("Fri"),
            Some('H') | Some('M') | Some('S') => out.push_str("00"),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

#[cfg(test)]
mod tests;
