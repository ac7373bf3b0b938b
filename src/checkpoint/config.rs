//! `config.json`, read leniently: unknown keys are fine, the keys embscope
//! uses must have the expected types. Multimodal configs nest the language
//! model under `text_config`; values are read from there first. Without a
//! config.json, Mistral's own `params.json` (beside `consolidated.safetensors`)
//! is read the same way: `vocab_size`, `dim` (the hidden size) and
//! `tied_embeddings`, its tie flag.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::{Error, Result};

/// Mistral's own config file, read when there is no config.json.
const PARAMS_JSON: &str = "params.json";

/// What embscope needs from `config.json`.
#[derive(Debug, Clone, Serialize)]
pub struct ModelConfig {
    /// The file read.
    pub file: PathBuf,
    /// `model_type` (of `text_config` when nested, else top level).
    pub model_type: Option<String>,
    /// `architectures`, top level.
    pub architectures: Vec<String>,
    /// `vocab_size`.
    pub vocab_size: Option<u64>,
    /// `hidden_size`, `n_embd` or `d_model`.
    pub hidden_size: Option<u64>,
    /// `torch_dtype` or `dtype`.
    pub torch_dtype: Option<String>,
    /// `tie_word_embeddings` as written (top level, else `text_config`).
    pub tie_word_embeddings: Option<bool>,
    /// Whether values came from a nested `text_config`.
    pub nested_text_config: bool,
    /// `general.name` of a GGUF file (absent for config.json).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `general.file_type` of a GGUF file, e.g. `Q4_K_M (15)` (absent for
    /// config.json).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_type: Option<String>,
    /// The whole document, for readers of other keys (special ids).
    #[serde(skip)]
    pub raw: Value,
}

impl ModelConfig {
    /// Reads `dir/config.json`, else Mistral's `dir/params.json`; `Ok(None)`
    /// when there is neither, an error naming the file when it cannot be
    /// read (opening goes on without it, see [`super::Unreadable`]).
    pub fn load(dir: &Path) -> Result<Option<ModelConfig>> {
        let mut found = None;
        for file in ["config.json", PARAMS_JSON].map(|name| dir.join(name)) {
            if crate::regular_file::found(&file, "a JSON file")?.is_some() {
                found = Some(file);
                break;
            }
        }
        let Some(file) = found else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(&file).map_err(|e| Error::io(&file, e))?;
        Self::parse(&file, &text).map(Some)
    }

    /// Whether this is Mistral's `params.json` (see [`Self::load`]).
    pub fn is_mistral_params(&self) -> bool {
        is_params_json(&self.file)
    }

    /// Parses the text of a config file.
    pub fn parse(file: &Path, text: &str) -> Result<ModelConfig> {
        let raw: Value = serde_json::from_str(text)
            .map_err(|e| Error::bad_file(file, format!("not valid JSON ({e})")))?;
        let Value::Object(top) = &raw else {
            return Err(Error::bad_file(file, "expected a JSON object"));
        };
        let text_cfg = match top.get("text_config") {
            Some(Value::Object(m)) => Some(m),
            None | Some(Value::Null) => None,
            Some(_) => return Err(Error::bad_file(file, "`text_config` is not an object")),
        };
        let bad = |key: &str, want: &str, v: &Value| {
            Error::bad_file(file, format!("`{key}` is {v}, expected {want}"))
        };
        // Look in text_config first, then at top level.
        let layers: Vec<&Map<String, Value>> = text_cfg.into_iter().chain([top]).collect();
        let find = |keys: &[&'static str]| find_key(&layers, keys);
        let uint = |keys: &[&'static str]| -> Result<Option<u64>> {
            match find(keys) {
                None => Ok(None),
                Some((k, v)) => v
                    .as_u64()
                    .map(Some)
                    .ok_or_else(|| bad(k, "a non-negative integer", v)),
            }
        };
        let string = |keys: &[&'static str]| -> Result<Option<String>> {
            match find(keys) {
                None => Ok(None),
                Some((k, v)) => v
                    .as_str()
                    .map(|s| Some(s.to_string()))
                    .ok_or_else(|| bad(k, "a string", v)),
            }
        };
        // The tie flag is a model-level setting: the top level wins.
        // Mistral's params.json calls it `tied_embeddings`.
        let tie_key = if is_params_json(file) {
            "tied_embeddings"
        } else {
            "tie_word_embeddings"
        };
        let tie = match top
            .get(tie_key)
            .or_else(|| text_cfg.and_then(|t| t.get(tie_key)))
        {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(v) => return Err(bad(tie_key, "true or false", v)),
        };
        let architectures = match top.get("architectures") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| bad("architectures", "a list of strings", &top["architectures"]))?,
            Some(v) => return Err(bad("architectures", "a list of strings", v)),
        };
        let torch_dtype = match find(&["torch_dtype", "dtype"]) {
            None => None,
            Some((_, Value::String(s))) => Some(s.clone()),
            // transformers sometimes writes {"torch_dtype": {"text_config": "bfloat16"}}-like maps
            Some((_, v)) => Some(v.to_string()),
        };
        Ok(ModelConfig {
            file: file.to_path_buf(),
            model_type: string(&["model_type"])?,
            architectures,
            vocab_size: uint(&["vocab_size", "n_vocab", "padded_vocab_size"])?,
            hidden_size: uint(&["hidden_size", "n_embd", "d_model", "dim"])?,
            torch_dtype,
            tie_word_embeddings: tie,
            nested_text_config: text_cfg.is_some(),
            name: None,
            file_type: None,
            raw,
        })
    }

    /// How messages name a config value: `config.json vocab_size`, or for
    /// a GGUF file the metadata key (`llama.vocab_size`,
    /// `llama.embedding_length` for the hidden size).
    pub fn describe(&self, key: &str) -> String {
        if self.is_mistral_params() {
            let key = if key == "hidden size" { "dim" } else { key };
            return format!("{PARAMS_JSON} {key}");
        }
        if !super::locate::is_gguf(&self.file) {
            return format!("config.json {key}");
        }
        let arch = self.model_type.as_deref().unwrap_or("?");
        match key {
            "vocab_size" => format!("GGUF `{arch}.vocab_size`"),
            "hidden size" => format!("GGUF `{arch}.embedding_length`"),
            other => format!("GGUF {other}"),
        }
    }

    /// `tie_word_embeddings` as transformers resolves it: the written value,
    /// else the default of the model family (true unless the family's config
    /// class says false). For Mistral's params.json, `tied_embeddings` as
    /// written, else `None`: mistral-inference has no default to follow.
    pub fn tie_resolved(&self) -> Option<bool> {
        if self.is_mistral_params() {
            return self.tie_word_embeddings;
        }
        Some(
            self.tie_word_embeddings
                .unwrap_or_else(|| family_ties_by_default(self.model_type.as_deref())),
        )
    }
}

/// Whether `file` is named as Mistral's `params.json`.
fn is_params_json(file: &Path) -> bool {
    file.file_name().is_some_and(|n| n == PARAMS_JSON)
}

/// The first non-null value among `keys`, searching each map in turn.
fn find_key<'a>(
    layers: &[&'a Map<String, Value>],
    keys: &[&'static str],
) -> Option<(&'static str, &'a Value)> {
    layers.iter().find_map(|m| {
        keys.iter()
            .find_map(|k| m.get(*k).filter(|v| !v.is_null()).map(|v| (*k, v)))
    })
}

/// The default of `tie_word_embeddings` in transformers' config class for a
/// `model_type`. `PretrainedConfig` defaults to true; these families set false.
fn family_ties_by_default(model_type: Option<&str>) -> bool {
    const UNTIED: &[&str] = &[
        "llama",
        "llama4_text",
        "mistral",
        "mixtral",
        "qwen2",
        "qwen2_moe",
        "qwen3",
        "qwen3_moe",
        "phi3",
        "phimoe",
        "phi",
        "gpt_neox",
        "gptj",
        "codegen",
        "olmo",
        "olmo2",
        "olmoe",
        "deepseek_v2",
        "deepseek_v3",
        "internlm2",
        "granite",
        "granitemoe",
        "stablelm",
        "falcon_mamba",
        "jamba",
        "exaone",
        "mllama",
        "persimmon",
        "nemotron",
        "glm",
        "glm4",
        "dbrx",
    ];
    match model_type {
        Some(t) => !UNTIED.contains(&t),
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<ModelConfig> {
        ModelConfig::parse(Path::new("config.json"), s)
    }

    #[test]
    fn tie_defaults_by_family() {
        for (json, written, resolved) in [
            (r#"{"model_type":"llama"}"#, None, false),
            (r#"{"model_type":"gpt2"}"#, None, true),
            (
                r#"{"model_type":"qwen3","tie_word_embeddings":true}"#,
                Some(true),
                true,
            ),
            (
                r#"{"model_type":"gemma3","text_config":{"model_type":"gemma3_text"}}"#,
                None,
                true,
            ),
            (r#"{}"#, None, true),
        ] {
            let c = parse(json).unwrap();
            assert_eq!(c.tie_word_embeddings, written, "{json}");
            assert_eq!(c.tie_resolved(), Some(resolved), "{json}");
        }
    }

    #[test]
    fn reads_nested_text_config_and_aliases() {
        let c = parse(
            r#"{"model_type":"llava","architectures":["LlavaForConditionalGeneration"],
                "text_config":{"model_type":"llama","vocab_size":32064,"hidden_size":4096,"torch_dtype":"float16"},
                "tie_word_embeddings":false}"#,
        )
        .unwrap();
        assert_eq!(c.model_type.as_deref(), Some("llama"));
        assert_eq!(c.vocab_size, Some(32064));
        assert_eq!(c.hidden_size, Some(4096));
        assert_eq!(c.torch_dtype.as_deref(), Some("float16"));
        assert!(c.nested_text_config);
        let g = parse(r#"{"model_type":"gpt2","n_embd":768,"vocab_size":50257}"#).unwrap();
        assert_eq!(g.hidden_size, Some(768));
    }

    #[test]
    fn wrong_types_name_the_key() {
        for (json, want) in [
            (
                r#"{"vocab_size":"many"}"#,
                "`vocab_size` is \"many\", expected a non-negative integer",
            ),
            (r#"{"tie_word_embeddings":"yes"}"#, "`tie_word_embeddings`"),
            (r#"[1]"#, "expected a JSON object"),
            (r#"{"#, "not valid JSON"),
        ] {
            let msg = parse(json).unwrap_err().to_string();
            assert!(msg.contains(want), "{msg}");
            assert!(msg.starts_with("`config.json`"), "{msg}");
        }
    }
}
