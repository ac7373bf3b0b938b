//! The chat template against the rows it feeds: the `template-uses-untrained`
//! error, the `chat-template` info when every token it emits looks
//! trained, and the `template-unrenderable` and `template-unchecked`
//! warnings.
//!
//! The templates are the model's own (every file that keeps one, see
//! `vocab::chat_template`) or, with `--chat-template`, those of a file or
//! another model. Each is rendered on a sample conversation (system,
//! user, assistant, and the generation prompt) whose contents are one
//! marker string; a template that refuses a role (Gemma's and Mistral's
//! raise on `system`) is rendered again without the system turn. The
//! rendered text is cut at the markers, and each piece is encoded by this
//! model's tokenizer: the ids are the template's own text and special
//! tokens, with no word of the sample in them. Each id is then looked up
//! in the scores of `untrained_rows`, which the value pass has made: the
//! template costs a render and a few encodings, no read of its own.

use std::path::Path;

use serde_json::json;

use super::untrained_rows::UntrainedRows;
use super::{Finding, Severity, Subject, ids_phrase};
use crate::checkpoint::{Checkpoint, Unreadable};
use crate::vocab::Vocab;
use crate::vocab::chat_template::{
    self, ChatTemplate, Message, RenderFailure, TemplateTokens, render,
};
use crate::{Error, Result};

/// The content of every message of the sample conversation: a string no
/// template writes itself, cut out of the rendered text before encoding.
const MARKER: &str = "\u{1}embscope-content\u{1}";

/// The templates to check and the special-token strings they may name.
#[derive(Debug, Default)]
pub struct Templates {
    /// The templates, in the order they were found.
    pub found: Vec<ChatTemplate>,
    /// The special-token strings declared beside them (the model's own
    /// declarations fill in the rest).
    pub tokens: TemplateTokens,
    /// Whether they were named with `--chat-template` (rather than read
    /// from the model's files).
    pub given: bool,
    /// A file of the model that keeps templates and could not be read
    /// (bad JSON, a `chat_template` that is neither a string nor a list
    /// of named ones): its templates are not checked.
    pub unreadable: Option<Unreadable>,
}

impl Templates {
    /// The model's own templates: its files and GGUF metadata. A file
    /// that cannot be read gives none, and is kept for its
    /// `unreadable-file` finding.
    pub fn of_model(ckpt: &Checkpoint) -> Templates {
        // A GGUF file's vocabulary is its metadata's, whatever lies
        // beside it.
        let (found, tokens) = match ckpt.gguf_metadata() {
            Some(meta) => (chat_template::in_gguf(meta), TemplateTokens::new()),
            None => match chat_template::in_dir(&ckpt.sources.dir) {
                Ok(read) => read,
                Err(e) => {
                    let dir = &ckpt.sources.dir;
                    let unreadable = Unreadable::from_error(&e, &dir.join("tokenizer_config.json"));
                    return Templates {
                        unreadable: Some(unreadable),
                        ..Templates::default()
                    };
                }
            },
        };
        Templates {
            found,
            tokens,
            given: false,
            unreadable: None,
        }
    }

    /// The templates `--chat-template ARG` names: a `.jinja` or JSON file,
    /// a model directory, or any MODEL (a GGUF file, a Hub id).
    pub fn given(arg: &str) -> Result<Templates> {
        let path = Path::new(arg);
        let (found, tokens) = if path.is_dir() {
            chat_template::in_dir(path)?
        } else if path.is_file() && !is_gguf(path) {
            chat_template::from_file(path)?
        } else {
            let other = Checkpoint::open(arg, "main")?;
            let mut t = match other.gguf_metadata() {
                Some(_) => Templates::of_model(&other),
                // Its files could not be read: say so, as for a file.
                None => {
                    let (found, tokens) = chat_template::in_dir(&other.sources.dir)?;
                    Templates {
                        found,
                        tokens,
                        given: true,
                        unreadable: None,
                    }
                }
            };
            t.given = true;
            return match t.found.is_empty() {
                true => Err(no_template(arg)),
                false => Ok(t),
            };
        };
        if found.is_empty() {
            return Err(no_template(arg));
        }
        Ok(Templates {
            found,
            tokens,
            given: true,
            unreadable: None,
        })
    }
}

fn no_template(arg: &str) -> Error {
    Error::BadInput(format!(
        "--chat-template {arg}: no chat template there (looked for chat_template.jinja, chat_template.json, tokenizer_config.json `chat_template` and GGUF tokenizer.chat_template)"
    ))
}

/// Whether `path` starts with the GGUF magic.
fn is_gguf(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && &magic == b"GGUF"
}

/// What one template emits, as this model's tokenizer encodes it.
pub(super) struct Emitted {
    /// The template's label (file, and name in a list).
    pub label: String,
    /// Its own token ids, in order of first appearance, or why there are
    /// none: the render failed, or the tokenizer could not encode it.
    pub ids: std::result::Result<Vec<u32>, Unchecked>,
    /// Whether it was rendered without the system turn.
    pub without_system: bool,
}

/// Why a template's tokens are not known.
pub(super) enum Unchecked {
    /// The template did not render, even without a system turn.
    Render(RenderFailure),
    /// The tokenizer could not encode the rendered text (or there is none).
    Encode(String),
}

/// The special-token strings a template may name: those declared beside
/// it, then the model's own (by role, as written or as the token of the
/// declared id).
pub(super) fn tokens(given: &TemplateTokens, vocab: &Vocab) -> TemplateTokens {
    let mut tokens = given.clone();
    for d in vocab.special_decls() {
        let key = format!("{}_token", d.role);
        if tokens.contains_key(&key) || !crate::vocab::ROLES.contains(&d.role.as_str()) {
            continue;
        }
        let text = match (&d.token, d.id) {
            (Some(t), _) => Some(t.clone()),
            (None, Some(id)) => u32::try_from(id)
                .ok()
                .and_then(|id| vocab.token(id))
                .map(str::to_string),
            _ => None,
        };
        if let Some(t) = text {
            tokens.insert(key, t);
        }
    }
    tokens
}

/// The first template that compiles, to render the `messages` of a data
/// set with.
pub(super) fn renderer<'t>(
    templates: &'t Templates,
    vocab: Option<&Vocab>,
) -> Option<chat_template::Renderer<'t>> {
    let tokens = tokens(&templates.tokens, vocab?);
    (templates.found.iter()).find_map(|t| chat_template::Renderer::new(t, &tokens).ok())
}

/// Renders and encodes every template (the same text twice is done once).
pub(super) fn emitted(templates: &Templates, vocab: Option<&Vocab>) -> Vec<Emitted> {
    let mut seen: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for t in &templates.found {
        if seen.contains(&t.text.as_str()) {
            continue;
        }
        seen.push(&t.text);
        let Some(vocab) = vocab else {
            out.push(Emitted {
                label: t.label(),
                ids: Err(Unchecked::Encode("no tokenizer".into())),
                without_system: false,
            });
            continue;
        };
        let tokens = tokens(&templates.tokens, vocab);
        let (text, without_system) = match sample_render(t, &tokens) {
            Ok(r) => r,
            Err(e) => {
                out.push(Emitted {
                    label: t.label(),
                    ids: Err(Unchecked::Render(e)),
                    without_system: false,
                });
                continue;
            }
        };
        out.push(Emitted {
            label: t.label(),
            ids: own_ids(&text, vocab).map_err(|e| Unchecked::Encode(e.to_string())),
            without_system,
        });
    }
    out
}

/// The sample conversation rendered, and whether the system turn was left
/// out for the template to render.
fn sample_render(
    t: &ChatTemplate,
    tokens: &TemplateTokens,
) -> std::result::Result<(String, bool), RenderFailure> {
    let turn = |role| Message {
        role,
        content: MARKER.to_string(),
    };
    let full = [turn("system"), turn("user"), turn("assistant")];
    match render(t, tokens, &full, true) {
        Ok(text) => Ok((text, false)),
        // Failing without the system turn too, the template says why it
        // fails on the turns every template takes.
        Err(_) => render(t, tokens, &full[1..], true).map(|text| (text, true)),
    }
}

/// The distinct ids of the pieces of `text` between the markers, in order
/// of first appearance.
fn own_ids(text: &str, vocab: &Vocab) -> Result<Vec<u32>> {
    let mut ids = Vec::new();
    for piece in text.split(MARKER).filter(|p| !p.is_empty()) {
        for id in vocab.encode(piece, false)? {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    Ok(ids)
}

/// The warnings known before the value pass: templates that did not
/// render or encode.
/// The `unreadable-file` error of a file the model keeps templates in,
/// unless the header findings name it already (a tokenizer_config.json
/// that is not JSON is unreadable for the special tokens too).
pub(super) fn unreadable_finding(t: &Templates, s: &Subject) -> Option<Finding> {
    let u = t.unreadable.as_ref()?;
    if s.unreadable.iter().any(|(known, _)| known.file == u.file) {
        return None;
    }
    Some(Finding::new(
        Severity::Error,
        "unreadable-file",
        format!(
            "`{}` is unreadable: {}; its chat templates are not checked",
            u.file.display(),
            u.fault
        ),
        json!({"file": u.file.display().to_string(), "fault": u.fault}),
    ))
}

pub(super) fn early_findings(emitted: &[Emitted]) -> Vec<Finding> {
    emitted
        .iter()
        .filter_map(|e| {
            let (code, message) = match e.ids.as_ref().err()? {
                Unchecked::Render(RenderFailure(why)) => (
                    "template-unrenderable",
                    format!(
                        "chat template `{}` does not render on a sample conversation: {why}",
                        e.label
                    ),
                ),
                Unchecked::Encode(why) => (
                    "template-unchecked",
                    format!(
                        "chat template `{}` is not checked against the rows: {why}",
                        e.label
                    ),
                ),
            };
            Some(Finding::new(
                Severity::Warn,
                code,
                message,
                json!({"template": e.label}),
            ))
        })
        .collect()
}

/// Per rendered template: the `template-uses-untrained` error naming each
/// of its tokens whose row looks untrained, or the `chat-template` info
/// when none does.
pub(super) fn findings(s: &Subject, emitted: &[Emitted], rows: &UntrainedRows) -> Vec<Finding> {
    if !rows.any() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for e in emitted {
        let Ok(ids) = &e.ids else { continue };
        let bad: Vec<u32> = ids
            .iter()
            .copied()
            .filter(|&id| rows.looks_untrained(id))
            .collect();
        let without = match e.without_system {
            true => " (rendered without a system turn, which it refuses)",
            false => "",
        };
        if bad.is_empty() {
            out.push(Finding::new(
                Severity::Info,
                "chat-template",
                format!(
                    "chat template `{}` emits {} token(s) of its own{without}; none of their rows looks untrained",
                    e.label,
                    ids.len()
                ),
                json!({"template": e.label, "tokens": ids.len(), "without_system": e.without_system}),
            ));
            continue;
        }
        out.push(Finding::new(
            Severity::Error,
            "template-uses-untrained",
            format!(
                "chat template `{}` emits {} token(s) whose rows look untrained: {}{without}; training with it feeds the model untrained rows",
                e.label,
                bad.len(),
                ids_phrase(s.vocab, &bad, 6),
            ),
            json!({
                "template": e.label,
                "tokens": bad.iter().map(|&id| rows.evidence(s, id)).collect::<Vec<_>>(),
                "emitted": ids.len(),
                "without_system": e.without_system,
            }),
        ));
    }
    out
}
