//! Deterministic mutation fuzzing of the tokenizer.json loader: byte
//! flips, truncations, JSON-significant bytes and UTF-8 fragments inserted
//! or deleted, lines duplicated or deleted, numbers rewritten to huge or
//! negative values, applied to fixture tokenizers of each kind (byte-level
//! BPE, SentencePiece BPE, WordPiece) and to variants made here that take
//! the scanner's other paths (compacted, joined merges before the vocab,
//! escaped tokens, a Unigram list vocab). Loading, then the queries the
//! commands make of a vocabulary, must return an answer or an error,
//! never panic; every 16th mutant also goes through `tensors`, `info`,
//! `check` and `undertrained` in-process beside its fixture's weights.
//! `fuzz_tokenizer_for_minutes` (ignored; `benches/fuzz.sh tokenizer`)
//! runs the same for `EMBSCOPE_FUZZ_SECS` seconds.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use embscope::vocab::Vocab;

use crate::common::fixtures;
use crate::common::fuzz::{Rng, catch, commands, env_or, keep, mutate_json, scratch_copy};

/// A tokenizer.json to mutate, and the fixture whose weights it goes with.
struct Seed {
    name: String,
    model: usize,
    bytes: Vec<u8>,
}

/// The fixtures whose weights and config the mutants are put beside.
const MODELS: [&str; 3] = ["qwen-f16-tied", "pieces-sentencepiece", "bert"];

/// The fixture tokenizers of each kind, as committed and as variants.
fn corpus() -> Vec<Seed> {
    let read = |dir: &str| std::fs::read(fixtures().join(dir).join("tokenizer.json")).unwrap();
    let (byte_level, sentencepiece, wordpiece) = (
        read("gpt2-tied"),
        read("pieces-sentencepiece"),
        read("bert"),
    );
    let seed = |name: &str, model, bytes| Seed {
        name: name.to_string(),
        model,
        bytes,
    };
    vec![
        seed("byte-level", 0, byte_level.clone()),
        seed("byte-level compact", 0, compact(&byte_level)),
        seed("byte-level escaped", 0, escaped(&byte_level)),
        seed("byte-level joined", 0, joined_merges(&byte_level)),
        seed("sentencepiece", 1, sentencepiece.clone()),
        seed(
            "sentencepiece joined",
            1,
            compact(&joined_merges(&sentencepiece)),
        ),
        seed("sentencepiece unigram", 1, unigram(&sentencepiece)),
        seed("wordpiece", 2, wordpiece.clone()),
        seed("wordpiece compact", 2, compact(&wordpiece)),
    ]
}

/// `json` without the whitespace between tokens (strings kept as written).
fn compact(json: &[u8]) -> Vec<u8> {
    let (mut out, mut in_string, mut escape) = (Vec::with_capacity(json.len()), false, false);
    for &c in json {
        if in_string {
            (in_string, escape) = (escape || c != b'"', !escape && c == b'\\');
        } else if c.is_ascii_whitespace() {
            continue;
        } else {
            in_string = c == b'"';
        }
        out.push(c);
    }
    out
}

/// The file re-written by serde_json (keys in its order: `merges` before
/// `vocab`), with its merges joined as `"a b"` strings.
fn joined_merges(json: &[u8]) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(json).unwrap();
    let merges = v["model"]["merges"].as_array_mut().unwrap();
    for m in merges.iter_mut() {
        *m = json!(format!(
            "{} {}",
            m[0].as_str().unwrap(),
            m[1].as_str().unwrap()
        ));
    }
    serde_json::to_vec_pretty(&v).unwrap()
}

/// The file with every `Ġ` written as `\u0120`, and the token `!` made
/// `"!\/` plus an emoji as a surrogate pair, all in escapes.
fn escaped(json: &[u8]) -> Vec<u8> {
    let text = String::from_utf8(json.to_vec()).unwrap();
    let text = text.replace('Ġ', "\\u0120");
    let text = text.replacen(r#""!": 0"#, r#""\"!\/\ud83d\ude00": 0"#, 1);
    assert_ne!(text.as_bytes(), json, "nothing escaped");
    text.into_bytes()
}

/// A Unigram tokenizer with the file's vocab as a list of `[token, score]`.
fn unigram(json: &[u8]) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(json).unwrap();
    let mut entries: Vec<(String, u64)> = v["model"]["vocab"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(token, id)| (token.clone(), id.as_u64().unwrap()))
        .collect();
    entries.sort_by_key(|&(_, id)| id);
    let list: Vec<Value> = entries
        .iter()
        .map(|(token, id)| json!([token, -(*id as f64) / 10.0]))
        .collect();
    v["model"] = json!({"type": "Unigram", "unk_id": 0, "byte_fallback": true, "vocab": list});
    serde_json::to_vec_pretty(&v).unwrap()
}

/// The queries the commands make of a vocabulary, on ids and words that
/// the file's own claims point at.
fn exercise(v: &Vocab) {
    let size = u32::try_from(v.size()).unwrap();
    let _ = (
        v.summary(),
        v.model(),
        v.style(),
        v.file(),
        v.special_decls(),
    );
    let mut ids = vec![
        0,
        1,
        2,
        size / 2,
        size.saturating_sub(1),
        size,
        size + 1,
        u32::MAX,
    ];
    ids.extend(v.added_tokens().iter().map(|a| a.id));
    ids.extend(v.config_added_tokens().iter().map(|&(id, _)| id));
    for id in ids {
        let _ = (
            v.has_token(id),
            v.is_special(id),
            v.kind(id),
            v.own_text(id),
        );
        if let Some(token) = v.token(id) {
            let _ = (v.id(token), v.resolve_word(token));
        }
        if let Some(shown) = v.readable(id) {
            let _ = (v.entry_id(&shown), v.resolve_word(&format!("={shown}")));
        }
    }
    for word in [
        "king",
        " king",
        "=king",
        "Hello",
        "",
        "=",
        "\\",
        "\\u{0}",
        "<s>",
        "[CLS]",
        "<0x0A>",
        "é",
        "##ing",
        "\u{2581}the",
        "Ġ",
    ] {
        let _ = (v.resolve_word(word), v.suggest(word, 5), v.entry_id(word));
    }
    let _ = v.ids_where(|_, t| t.starts_with('<'));
    let _ = v.model_entries().count();
    let _ = v.duplicates();
}

/// Writes `bytes` as the tokenizer.json of `dir` and loads it (keeping the
/// merges' places when `keep_merges`), then queries the vocabulary.
/// Returns whether it loaded.
fn load(dir: &Path, bytes: &[u8], config: Option<&Value>, keep_merges: bool) -> bool {
    std::fs::write(dir.join("tokenizer.json"), bytes).unwrap();
    let loaded = match keep_merges {
        true => Vocab::load_keeping_merges(dir, config),
        false => Vocab::load(dir, config),
    };
    match loaded {
        Ok(Some(v)) => {
            exercise(&v);
            let _ = v.encode("Hello king, 1234\n", true);
            let _ = v.encode(" é\u{0}<s>", false);
            true
        }
        Ok(None) => panic!("tokenizer.json not found"),
        Err(_) => false,
    }
}

/// How a run went.
#[derive(Debug)]
struct Outcome {
    /// Mutants tried.
    count: u64,
    /// Mutants that loaded.
    loaded: u64,
    /// The first panic: where, what, and where its input was kept.
    panic: Option<String>,
}

/// Runs mutations until `done(count)`, stopping at the first panic.
fn run(seed: u64, done: impl Fn(u64) -> bool) -> Outcome {
    let corpus = corpus();
    let dirs: Vec<_> = MODELS.iter().map(|m| scratch_copy(m)).collect();
    let configs: Vec<Value> = dirs
        .iter()
        .map(|d| serde_json::from_slice(&std::fs::read(d.path().join("config.json")).unwrap()))
        .collect::<Result<_, _>>()
        .unwrap();
    let mut rng = Rng(seed);
    let mut out = Outcome {
        count: 0,
        loaded: 0,
        panic: None,
    };
    while !done(out.count) {
        let s = &corpus[rng.below(corpus.len())];
        let mut bytes = s.bytes.clone();
        for _ in 0..1 + rng.below(3) {
            mutate_json(&mut rng, &mut bytes);
        }
        out.count += 1;
        let dir = dirs[s.model].path();
        let keep_merges = out.count.is_multiple_of(2);
        let mut result = catch(|| load(dir, &bytes, Some(&configs[s.model]), keep_merges));
        if out.count.is_multiple_of(16) && result.is_ok() {
            result = catch(|| commands(dir)).and(result);
        }
        match result {
            Ok(loaded) => out.loaded += u64::from(loaded),
            Err(msg) => {
                let kept = keep("tokenizer", seed, out.count, &dir.join("tokenizer.json"));
                out.panic = Some(format!(
                    "mutant {} of {} (seed {seed}): {msg}; kept as {}",
                    out.count,
                    s.name,
                    kept.display()
                ));
                break;
            }
        }
    }
    out
}

#[test]
fn the_variants_load_as_their_originals() {
    let corpus = corpus();
    let dirs: Vec<_> = MODELS.iter().map(|m| scratch_copy(m)).collect();
    for s in &corpus {
        let dir = dirs[s.model].path();
        std::fs::write(dir.join("tokenizer.json"), &s.bytes).unwrap();
        let v = Vocab::load(dir, None).unwrap().unwrap();
        assert!(v.size() > 30, "{}: {v:?}", s.name);
        exercise(&v);
        v.encode("Hello king", true).unwrap();
        commands(dir).unwrap_or_else(|e| panic!("{}: {e}", s.name));
    }
}

#[test]
fn mutated_tokenizers_never_panic() {
    let out = run(7, |n| n >= 800);
    assert_eq!(out.panic, None);
    // Both outcomes are exercised: many mutants still load, many do not.
    assert!((40..760).contains(&out.loaded), "{out:?}");
}

#[test]
#[ignore = "minutes of fuzzing: benches/fuzz.sh tokenizer"]
fn fuzz_tokenizer_for_minutes() {
    let secs = env_or("EMBSCOPE_FUZZ_SECS", 180);
    let seed = env_or("EMBSCOPE_FUZZ_SEED", 12345);
    let until = Instant::now() + Duration::from_secs(secs);
    let out = run(seed, |_| Instant::now() >= until);
    eprintln!(
        "fuzz-tokenizer: {} mutated files ({} still loaded), seed {seed}, {secs} s, panics: {:?}",
        out.count, out.loaded, out.panic
    );
    assert_eq!(out.panic, None);
}
