//! The config of a GGUF file, from its metadata: `general.architecture`,
//! `{arch}.embedding_length`, `{arch}.vocab_size`, `general.file_type` and
//! `general.name`, shown by `info` like the fields of a `config.json`.

use std::collections::HashMap;
use std::path::Path;

use candle_core::quantized::gguf_file::Value;

use super::ModelConfig;
use crate::{Error, Result};

/// Builds the config of the GGUF file `path` from its metadata. Keys that
/// are present must have the types the GGUF spec gives them.
pub fn from_metadata(path: &Path, md: &HashMap<String, Value>) -> Result<ModelConfig> {
    let string = |key: &str| -> Result<Option<String>> {
        match md.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(wrong(path, key, v, "a string")),
        }
    };
    let arch = string("general.architecture")?;
    let uint = |key: String| -> Result<Option<u64>> {
        match md.get(&key) {
            None => Ok(None),
            Some(v) => unsigned(v)
                .map(Some)
                .ok_or_else(|| wrong(path, &key, v, "a non-negative integer")),
        }
    };
    let (vocab_size, hidden_size) = match &arch {
        Some(a) => (
            uint(format!("{a}.vocab_size"))?,
            uint(format!("{a}.embedding_length"))?,
        ),
        None => (None, None),
    };
    let file_type = uint("general.file_type".into())?
        .map(|t| format!("{} ({t})", file_type_name(t).unwrap_or("unknown")));
    Ok(ModelConfig {
        file: path.to_path_buf(),
        model_type: arch,
        architectures: Vec::new(),
        vocab_size,
        hidden_size,
        torch_dtype: None,
        tie_word_embeddings: None,
        nested_text_config: false,
        name: string("general.name")?,
        file_type,
        raw: serde_json::Value::Null,
    })
}

/// An unsigned value of any integer type (negative ones are not).
pub(super) fn unsigned(v: &Value) -> Option<u64> {
    match v {
        Value::U8(x) => Some(u64::from(*x)),
        Value::U16(x) => Some(u64::from(*x)),
        Value::U32(x) => Some(u64::from(*x)),
        Value::U64(x) => Some(*x),
        Value::I8(x) => u64::try_from(*x).ok(),
        Value::I16(x) => u64::try_from(*x).ok(),
        Value::I32(x) => u64::try_from(*x).ok(),
        Value::I64(x) => u64::try_from(*x).ok(),
        _ => None,
    }
}

fn wrong(path: &Path, key: &str, v: &Value, want: &str) -> Error {
    let shown = match v {
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(a) => format!("an array of {} values", a.len()),
        other => format!("{other:?}"),
    };
    Error::bad_file(
        path,
        format!("metadata `{key}` is {shown}, expected {want}"),
    )
}

/// llama.cpp's name for a `general.file_type` (`llama_ftype`), without the
/// `MOSTLY_` prefix.
fn file_type_name(t: u64) -> Option<&'static str> {
    Some(match t {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K",
        11 => "Q3_K_S",
        12 => "Q3_K_M",
        13 => "Q3_K_L",
        14 => "Q4_K_S",
        15 => "Q4_K_M",
        16 => "Q5_K_S",
        17 => "Q5_K_M",
        18 => "Q6_K",
        19 => "IQ2_XXS",
        20 => "IQ2_XS",
        21 => "Q2_K_S",
        22 => "IQ3_XS",
        23 => "IQ3_XXS",
        24 => "IQ1_S",
        25 => "IQ4_NL",
        26 => "IQ3_S",
        27 => "IQ3_M",
        28 => "IQ2_S",
        29 => "IQ2_M",
        30 => "IQ4_XS",
        31 => "IQ1_M",
        32 => "BF16",
        36 => "TQ1_0",
        37 => "TQ2_0",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_architecture_keys() {
        let md: HashMap<String, Value> = [
            ("general.architecture", Value::String("llama".into())),
            ("general.name", Value::String("tiny".into())),
            ("general.file_type", Value::U32(15)),
            ("llama.embedding_length", Value::U32(256)),
            ("llama.vocab_size", Value::U64(320)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let c = from_metadata(Path::new("m.gguf"), &md).unwrap();
        assert_eq!(c.model_type.as_deref(), Some("llama"));
        assert_eq!(c.hidden_size, Some(256));
        assert_eq!(c.vocab_size, Some(320));
        assert_eq!(c.file_type.as_deref(), Some("Q4_K_M (15)"));
        assert_eq!(c.name.as_deref(), Some("tiny"));
    }

    #[test]
    fn wrong_types_name_the_key() {
        let md: HashMap<String, Value> = [
            ("general.architecture", Value::String("llama".into())),
            ("llama.embedding_length", Value::String("big".into())),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let e = from_metadata(Path::new("m.gguf"), &md)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "`m.gguf`: metadata `llama.embedding_length` is the string \"big\", expected a non-negative integer"
        );
    }
}
