//! Calls into the tokenizers crate with its panics kept inside: the crate
//! panics on some files it is handed (a `Precompiled` normalizer without
//! its `precompiled_charsmap`, whose deserialiser ends in `expect`; a
//! charsmap whose trie points outside itself, on the first text it
//! normalises), and a file is untrusted input, so a panic there must
//! become an error naming the file, not an abort of the process.
//!
//! What can be checked before the crate sees the JSON is checked first
//! ([`normalizer_fault`]), for a message that says what is wrong; the
//! rest is caught ([`contained`]). The panic hook stays silent for a
//! caught panic only: a panic anywhere else (a bug of embscope's) still
//! prints as usual.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

use base64::Engine as _;
use serde_json::Value;

thread_local! {
    /// Whether this thread runs a [`contained`] call now.
    static CONTAINED: Cell<bool> = const { Cell::new(false) };
}

/// Installs, once, a panic hook that is silent on a thread running a
/// [`contained`] call and otherwise does what the hook before it did.
fn install_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let before = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !CONTAINED.with(Cell::get) {
                before(info);
            }
        }));
    });
}

/// Runs `f`, which calls into the tokenizers crate; a panic inside it is
/// returned as an error saying so, with the panic's message.
pub(crate) fn contained<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    install_hook();
    let was = CONTAINED.with(|c| c.replace(true));
    let out = panic::catch_unwind(AssertUnwindSafe(f));
    CONTAINED.with(|c| c.set(was));
    out.map_err(|payload| {
        let message = (payload.downcast_ref::<&str>().copied())
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("no message");
        let line = message.split_whitespace().collect::<Vec<_>>().join(" ");
        format!("the tokenizers crate failed on it ({line})")
    })
}

/// What is wrong with a tokenizer.json `normalizer` that the tokenizers
/// crate would panic on rather than refuse: a `Precompiled` step whose
/// `precompiled_charsmap` is missing, not base64, or not a charsmap (a
/// trie of at least one unit, then UTF-8 text). `None` when there is none.
pub(crate) fn normalizer_fault(normalizer: &Value) -> Option<String> {
    let mut steps = Vec::new();
    super::parse::find_type(normalizer, "Precompiled", &mut steps);
    steps.into_iter().find_map(|step| {
        let fault = match step.get("precompiled_charsmap") {
            None | Some(Value::Null) => "has no precompiled_charsmap",
            Some(Value::String(s)) => match base64::engine::general_purpose::STANDARD.decode(s) {
                Err(_) => "has a precompiled_charsmap that is not base64",
                Ok(bytes) if !is_charsmap(&bytes) => {
                    "has a precompiled_charsmap that is not a SentencePiece charsmap"
                }
                Ok(_) => return None,
            },
            Some(_) => "has a precompiled_charsmap that is not a string",
        };
        Some(format!("normalizer Precompiled {fault}"))
    })
}

/// Whether `b` is laid out as SentencePiece's charsmap: a little-endian
/// u32 byte length of the trie (at least one 4-byte unit, all present),
/// then the normalised strings as UTF-8.
fn is_charsmap(b: &[u8]) -> bool {
    let Some((len, rest)) = b.split_first_chunk::<4>() else {
        return false;
    };
    let trie = (u32::from_le_bytes(*len) / 4) as usize * 4;
    trie >= 4 && rest.len() >= trie && std::str::from_utf8(&rest[trie..]).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_panic_is_an_error_with_its_message() {
        assert_eq!(contained(|| 5), Ok(5));
        let err = contained(|| -> u8 { panic!("Precompiled:\n  missing") }).unwrap_err();
        assert_eq!(
            err,
            "the tokenizers crate failed on it (Precompiled: missing)"
        );
        // Nested calls leave the outer one contained.
        let inner = contained(|| contained(|| -> u8 { panic!("inner") }));
        assert!(inner.unwrap().is_err());
        assert!(contained(|| -> u8 { panic!("{}", 5) }).is_err());
    }

    #[test]
    fn precompiled_normalizers_the_crate_would_panic_on() {
        let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        let good = b64(&[4, 0, 0, 0, 1, 2, 3, 4, b'a', 0]);
        let step =
            |charsmap: Value| json!({"type": "Precompiled", "precompiled_charsmap": charsmap});
        let seq = |s: Value| json!({"type": "Sequence", "normalizers": [{"type": "NFC"}, s]});
        assert_eq!(normalizer_fault(&seq(step(json!(good)))), None);
        assert_eq!(normalizer_fault(&json!({"type": "NFKC"})), None);
        for (charsmap, fault) in [
            (Value::Null, "has no precompiled_charsmap"),
            (json!(5), "is not a string"),
            (json!("@@"), "is not base64"),
            (json!(b64(&[0, 0, 0, 0])), "not a SentencePiece charsmap"),
            (
                json!(b64(&[8, 0, 0, 0, 1, 2, 3, 4])),
                "not a SentencePiece charsmap",
            ),
            (
                json!(b64(&[4, 0, 0, 0, 1, 2, 3, 4, 0xff])),
                "not a SentencePiece charsmap",
            ),
        ] {
            let got = normalizer_fault(&seq(step(charsmap))).unwrap();
            assert!(got.starts_with("normalizer Precompiled "), "{got}");
            assert!(got.ends_with(fault), "{got}");
        }
        let bare = json!({"type": "Precompiled"});
        assert_eq!(
            normalizer_fault(&bare).as_deref(),
            Some("normalizer Precompiled has no precompiled_charsmap")
        );
    }
}
