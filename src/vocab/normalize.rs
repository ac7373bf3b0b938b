//! A word typed by a user, normalised as the tokenizer normalises text
//! before its model sees it: `café` is `cafe` to BERT uncased (lowercase,
//! then accents stripped), `ﬁne` is `fine` after NFKC. A word query
//! looks up the normalised word, since that is what the tokenizer would
//! look up.
//!
//! The normaliser is tokenizer.json's `normalizer`, or for a GGUF
//! vocabulary what llama.cpp applies for its tokenizer model (WordPiece:
//! lowercase and strip accents; the others nothing). Only the steps that
//! change a word's characters are kept: the steps that mark spaces
//! (`Prepend`, a `Replace` of whitespace, `ByteLevel`'s mapping to
//! byte-level chars), which the entry forms already stand for, and
//! `Strip`, which would take the leading space of ` king`, are left out,
//! and BERT's normaliser puts no spaces around CJK chars (they would split
//! the word the user asked for as one).

use std::borrow::Cow;

use serde_json::{Value, json};
use tokenizers::{NormalizedString, Normalizer, NormalizerWrapper};

use super::contain::{contained, normalizer_fault};

/// The normaliser a word goes through (`None`: words are taken as typed).
pub(crate) struct WordNormalizer(Option<NormalizerWrapper>);

impl WordNormalizer {
    /// The word normaliser of a tokenizer.json `normalizer`; the error
    /// says why the tokenizers crate cannot build it.
    pub(crate) fn new(normalizer: Option<&Value>) -> Result<WordNormalizer, String> {
        let Some(steps) = normalizer.and_then(word_steps) else {
            return Ok(WordNormalizer(None));
        };
        if let Some(fault) = normalizer_fault(&steps) {
            return Err(fault);
        }
        let built = contained(|| serde_json::from_value::<NormalizerWrapper>(steps))?;
        built
            .map(|n| WordNormalizer(Some(n)))
            .map_err(|e| format!("normalizer: {e}"))
    }

    /// `word` normalised; leading spaces are kept as typed (` king` asks
    /// for the leading-space entry).
    pub(crate) fn apply<'w>(&self, word: &'w str) -> Result<Cow<'w, str>, String> {
        let Some(n) = &self.0 else {
            return Ok(Cow::Borrowed(word));
        };
        let bare = word.trim_start_matches(' ');
        let mut s = NormalizedString::from(bare);
        contained(|| n.normalize(&mut s))?.map_err(|e| format!("normalizer: {e}"))?;
        if s.get() == bare {
            return Ok(Cow::Borrowed(word));
        }
        Ok(Cow::Owned(format!(
            "{}{}",
            &word[..word.len() - bare.len()],
            s.get()
        )))
    }
}

/// The normaliser llama.cpp applies to text for GGUF tokenizer model
/// `model`, as a tokenizer.json `normalizer`: its WordPiece tokenizer
/// (`bert`) lowercases and strips accents; SentencePiece (`llama`) and
/// byte-level BPE (`gpt2`) change no character.
pub(crate) fn gguf_normalizer(model: &str) -> Option<Value> {
    (model == "bert").then(|| {
        json!({"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": false,
               "strip_accents": null, "lowercase": true})
    })
}

/// The steps of a tokenizer.json `normalizer` that change a word's
/// characters (see the module docs); `None` when none does.
fn word_steps(step: &Value) -> Option<Value> {
    let kind = step.get("type").and_then(Value::as_str)?;
    match kind {
        "Sequence" => {
            let kept: Vec<Value> = (step.get("normalizers")?.as_array()?.iter())
                .filter_map(word_steps)
                .collect();
            match kept.len() {
                0 => None,
                1 => kept.into_iter().next(),
                _ => Some(json!({"type": "Sequence", "normalizers": kept})),
            }
        }
        "Prepend" | "Strip" | "ByteLevel" => None,
        "Replace" if marks_spaces(step) => None,
        "BertNormalizer" => {
            let mut bert = step.clone();
            bert["handle_chinese_chars"] = json!(false);
            Some(bert)
        }
        _ => Some(step.clone()),
    }
}

/// What `normalizer` does to a word's characters, in words
/// (`lowercase, strip accents`; `none`): two normalisers with one
/// description treat text alike, however their files spell it (BERT's
/// `strip_accents: null` follows `lowercase`; a GGUF vocabulary's implied
/// normaliser reads like the tokenizer.json it was converted from).
pub(crate) fn describe(normalizer: Option<&Value>) -> String {
    let mut parts = Vec::new();
    if let Some(steps) = normalizer.and_then(word_steps) {
        describe_step(&steps, &mut parts);
    }
    if parts.is_empty() {
        return "none".into();
    }
    parts.join(", ")
}

fn describe_step(step: &Value, parts: &mut Vec<String>) {
    let kind = step.get("type").and_then(Value::as_str).unwrap_or("?");
    let flag = |name: &str| step.get(name).and_then(Value::as_bool);
    match kind {
        "Sequence" => {
            let steps = step.get("normalizers").and_then(Value::as_array);
            for s in steps.into_iter().flatten() {
                describe_step(s, parts);
            }
        }
        "BertNormalizer" => {
            let lowercase = flag("lowercase").unwrap_or(true);
            if flag("clean_text").unwrap_or(true) {
                parts.push("clean text".into());
            }
            if lowercase {
                parts.push("lowercase".into());
            }
            if flag("strip_accents").unwrap_or(lowercase) {
                parts.push("strip accents".into());
            }
        }
        "Lowercase" => parts.push("lowercase".into()),
        "StripAccents" => parts.push("strip accents".into()),
        "Replace" => {
            let pattern = (step.pointer("/pattern/String"))
                .or_else(|| step.pointer("/pattern/Regex"))
                .map_or_else(|| "?".to_string(), |p| p.to_string());
            let content = step
                .get("content")
                .map_or_else(String::new, Value::to_string);
            parts.push(format!("replace {pattern} with {content}"));
        }
        "Precompiled" => {
            let map = step.get("precompiled_charsmap").and_then(Value::as_str);
            parts.push(format!(
                "precompiled charsmap ({} chars)",
                map.map_or(0, str::len)
            ));
        }
        // NFC, NFD, NFKC, NFKD, Nmt and any step this reader does not name.
        other => parts.push(other.to_string()),
    }
}

/// Whether a `Replace` step replaces a whitespace string (SentencePiece's
/// `" "` → `"▁"`).
fn marks_spaces(step: &Value) -> bool {
    step.pointer("/pattern/String")
        .and_then(Value::as_str)
        .is_some_and(|p| !p.is_empty() && p.chars().all(char::is_whitespace))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normalised(normalizer: Value, word: &str) -> String {
        let n = WordNormalizer::new(Some(&normalizer)).unwrap();
        n.apply(word).unwrap().into_owned()
    }

    #[test]
    fn words_as_each_normalizer_leaves_them() {
        let bert = json!({"type": "BertNormalizer", "clean_text": true,
            "handle_chinese_chars": true, "strip_accents": null, "lowercase": true});
        assert_eq!(normalised(bert.clone(), "Café"), "cafe");
        assert_eq!(normalised(bert.clone(), " Café"), " cafe");
        assert_eq!(normalised(bert, "北京"), "北京");
        let cased = json!({"type": "BertNormalizer", "clean_text": true,
            "handle_chinese_chars": true, "strip_accents": null, "lowercase": false});
        assert_eq!(normalised(cased, "Café"), "Café");
        let seq = |steps: Value| json!({"type": "Sequence", "normalizers": steps});
        let nfkc_lower = seq(json!([{"type": "NFKC"}, {"type": "Lowercase"}]));
        assert_eq!(normalised(nfkc_lower, "ＡＢＣ ﬁne"), "abc fine");
        let accents = seq(json!([{"type": "NFD"}, {"type": "StripAccents"}, {"type": "NFC"}]));
        assert_eq!(normalised(accents, "naïve"), "naive");
        // Llama 2's: only space marks, so nothing is left to apply.
        let llama = seq(json!([{"type": "Prepend", "prepend": "▁"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]));
        assert!(word_steps(&llama).is_none());
        assert_eq!(normalised(llama, "king"), "king");
        let replace = json!({"type": "Replace", "pattern": {"String": "``"}, "content": "\""});
        assert_eq!(normalised(replace, "``hi"), "\"hi");
        let gguf = gguf_normalizer("bert").unwrap();
        assert_eq!(normalised(gguf, "Ärger"), "arger");
        assert!(gguf_normalizer("llama").is_none());
    }

    #[test]
    fn a_normalizer_the_crate_cannot_build_is_an_error() {
        let bare = json!({"type": "Precompiled"});
        let err = WordNormalizer::new(Some(&bare)).err().unwrap();
        assert_eq!(err, "normalizer Precompiled has no precompiled_charsmap");
        let unknown = json!({"type": "Lowercase", "extra": 1});
        assert!(WordNormalizer::new(Some(&unknown)).is_ok());
        let bad = json!({"type": "Replace", "pattern": {"Regex": "("}, "content": ""});
        let err = WordNormalizer::new(Some(&bad)).err().unwrap();
        assert!(err.starts_with("normalizer: "), "{err}");
    }

    #[test]
    fn descriptions_say_what_changes_characters() {
        let bert = |strip: Value| {
            json!({"type": "BertNormalizer", "clean_text": true,
                "handle_chinese_chars": true, "strip_accents": strip, "lowercase": true})
        };
        let uncased = "clean text, lowercase, strip accents";
        assert_eq!(describe(Some(&bert(Value::Null))), uncased);
        assert_eq!(describe(Some(&bert(json!(true)))), uncased);
        assert_eq!(describe(Some(&bert(json!(false)))), "clean text, lowercase");
        // A GGUF WordPiece vocabulary reads like BERT uncased.
        assert_eq!(describe(gguf_normalizer("bert").as_ref()), uncased);
        // Llama 2's marks spaces only: like a GGUF llama vocabulary's none.
        let llama = json!({"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "▁"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]});
        assert_eq!(describe(Some(&llama)), "none");
        assert_eq!(describe(None), "none");
        let nfkc = json!({"type": "Sequence", "normalizers": [{"type": "NFKC"},
            {"type": "Replace", "pattern": {"String": "``"}, "content": "\""}]});
        assert_eq!(describe(Some(&nfkc)), "NFKC, replace \"``\" with \"\\\"\"");
    }
}
