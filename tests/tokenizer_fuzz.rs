//! Deterministic mutation fuzzing of the tokenizer.json loader (and of the
//! older files read without one: vocab.txt, vocab.json, merges.txt,
//! added_tokens.json, a SentencePiece tokenizer.model): byte
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
//!
//! The side files that declare special tokens, `tokenizer_config.json`,
//! `special_tokens_map.json` and `generation_config.json`, are mutated
//! beside their fixture's unmutated tokenizer.json and weights: as text,
//! and as JSON (ids made huge, negative, floats or strings, tokens made
//! arrays, objects, null or nested `content`, `added_tokens_decoder` keys
//! made non-numbers or huge numbers, eos lists of mixed types, values
//! nested deeper than the JSON reader's limit). Each mutant's vocabulary
//! is loaded and queried, then goes through the commands in-process;
//! every 64th also through the `embscope` binary (`info`, `check`), whose
//! exit code must be 0, 1 or 2. `fuzz_side_files_for_minutes` (ignored;
//! `benches/fuzz.sh side_files`) runs the same for minutes.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use tempfile::TempDir;

use embscope::vocab::{ROLES, Vocab};

use crate::common::fixtures;
use crate::common::fuzz::{
    Rng, binary_answers, catch, commands, env_or, keep, mutate_json, panic_report, scratch_copy,
};

/// A tokenizer file to mutate, its name, and the fixture whose weights it
/// goes with.
struct Seed {
    name: String,
    file: &'static str,
    model: usize,
    bytes: Vec<u8>,
}

/// The fixtures whose weights and config the mutants are put beside: the
/// last three have older tokenizer files instead of a tokenizer.json.
const MODELS: [&str; 6] = [
    "qwen-f16-tied",
    "pieces-sentencepiece",
    "bert",
    "bert-vocab-txt",
    "gpt2-vocab-merges",
    "sentencepiece-model",
];

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
        file: "tokenizer.json",
        model,
        bytes,
    };
    let older = |model: usize, file: &'static str| Seed {
        name: file.to_string(),
        file,
        model,
        bytes: std::fs::read(fixtures().join(MODELS[model]).join(file)).unwrap(),
    };
    vec![
        older(3, "vocab.txt"),
        older(4, "vocab.json"),
        older(4, "merges.txt"),
        older(4, "added_tokens.json"),
        older(5, "tokenizer.model"),
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
    let _ = v.reached(&ids);
    for id in ids {
        let _ = (v.has_token(id), v.is_special(id), v.kind(id));
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

/// Writes `bytes` as the tokenizer file `file` of `dir` and loads the
/// vocabulary (keeping the merges' places when `keep_merges`), then
/// queries it. Returns whether it loaded.
fn load(
    dir: &Path,
    (file, bytes): (&str, &[u8]),
    config: Option<&Value>,
    keep_merges: bool,
) -> bool {
    std::fs::write(dir.join(file), bytes).unwrap();
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
        Ok(None) => panic!("{file} not found"),
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
        let file = (s.file, &bytes[..]);
        let mut result = catch(|| load(dir, file, Some(&configs[s.model]), keep_merges));
        if out.count.is_multiple_of(16) && result.is_ok() {
            result = catch(|| commands(dir)).and(result);
        }
        match result {
            Ok(loaded) => out.loaded += u64::from(loaded),
            Err(msg) => {
                let kept = keep("tokenizer", seed, out.count, &dir.join(s.file));
                out.panic = Some(panic_report(seed, out.count, &s.name, &msg, &kept));
                break;
            }
        }
        // The older files are several: the next mutant of one meets the
        // others as committed.
        std::fs::write(dir.join(s.file), &s.bytes).unwrap();
    }
    out
}

#[test]
fn the_variants_load_as_their_originals() {
    let corpus = corpus();
    let dirs: Vec<_> = MODELS.iter().map(|m| scratch_copy(m)).collect();
    for s in &corpus {
        let dir = dirs[s.model].path();
        std::fs::write(dir.join(s.file), &s.bytes).unwrap();
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

// The side files: tokenizer_config.json, special_tokens_map.json and
// generation_config.json beside an unmutated tokenizer.json.

/// The files beside tokenizer.json that declare special tokens.
const SIDE_FILES: [&str; 3] = [
    "tokenizer_config.json",
    "special_tokens_map.json",
    "generation_config.json",
];

/// The fixtures whose side files are mutated: every side file with
/// `added_tokens_decoder` and token objects (sharded Llama), a list eos
/// disagreeing with config.json, added tokens at other ids,
/// `additional_special_tokens`, WordPiece's `cls`/`sep`/`mask`, and the
/// three whose vocabulary is converted from older files with these
/// settings.
const SIDE_MODELS: [&str; 8] = [
    "llama-sharded",
    "defects/special-tokens-disagree",
    "defects/added-token-id-differs",
    "defects/special-token-missing",
    "bert",
    "bert-vocab-txt",
    "gpt2-vocab-merges",
    "sentencepiece-model",
];

/// A scratch copy of a fixture and its side files as committed (`None`
/// for one it lacks; such a file is now and then written from Llama's).
struct Side {
    name: &'static str,
    dir: TempDir,
    originals: Vec<Option<Vec<u8>>>,
}

fn sides() -> Vec<Side> {
    SIDE_MODELS
        .iter()
        .map(|&name| {
            let dir = scratch_copy(name);
            let originals = SIDE_FILES
                .iter()
                .map(|f| std::fs::read(dir.path().join(f)).ok())
                .collect();
            Side {
                name,
                dir,
                originals,
            }
        })
        .collect()
}

/// Ids a side file may declare: out of every range, negative, not
/// integers, and ids the fixtures have.
fn id_values() -> [Value; 16] {
    [
        json!(4294967295u32),
        json!(4294967296u64),
        json!(16777216),
        json!(-1),
        json!(1e30),
        json!(1.5),
        json!("7"),
        json!(i64::MAX),
        json!(i64::MIN),
        json!(u64::MAX),
        json!(0),
        json!(3),
        json!(31),
        json!(32),
        json!(340),
        json!(null),
    ]
}

/// What a token may be written as: tokens the fixtures have or lack, and
/// values of every other JSON type, `content` among them.
fn token_values() -> [Value; 17] {
    [
        json!("[CLS]"),
        json!("<|end_of_text|>"),
        json!("<s>"),
        json!(""),
        json!("\u{0}"),
        json!("never seen"),
        json!(null),
        json!(5),
        json!(true),
        json!([]),
        json!(["[SEP]"]),
        json!({}),
        json!({"content": "[SEP]", "special": true}),
        json!({"content": {"content": "[CLS]"}}),
        json!({"content": null}),
        json!({"content": 7}),
        json!({"content": "[MASK]", "special": "yes"}),
    ]
}

/// What a key of `added_tokens_decoder` may be rewritten to.
const DECODER_KEYS: &[&str] = &[
    "x",
    "",
    "-1",
    "4294967295",
    "4294967296",
    "16777216",
    "99999999999999999999",
    "1e3",
    "1.5",
    " 4",
    "+4",
    "04",
    "0x10",
    "\u{663}",
    "31",
    "32",
];

/// A JSON value `depth` arrays or `content` objects deep.
fn deep(rng: &mut Rng) -> String {
    let depth = rng.pick(&[64, 127, 128, 129, 1000, 100_000]);
    let (open, close) = rng.pick(&[("[", "]"), (r#"{"content":"#, "}")]);
    format!("{}\"[CLS]\"{}", open.repeat(depth), close.repeat(depth))
}

/// Stands for the [`deep`] text in a value, replaced after serializing.
const DEEP: &str = "@@deep@@";

/// One JSON-aware edit of a side file's object: an id, an eos list of
/// mixed types, a token, `additional_special_tokens`, a key or an entry
/// of `added_tokens_decoder` rewritten; a key dropped; a value made deep.
fn edit_side(rng: &mut Rng, obj: &mut Map<String, Value>) {
    let role = rng.pick(&ROLES);
    match rng.below(10) {
        0 | 1 => {
            obj.insert(format!("{role}_token_id"), rng.pick(&id_values()));
        }
        2 => {
            let list: Vec<Value> = (0..rng.below(5))
                .map(|_| match rng.below(4) {
                    0 => rng.pick(&token_values()),
                    _ => rng.pick(&id_values()),
                })
                .collect();
            obj.insert("eos_token_id".into(), Value::Array(list));
        }
        3 | 4 => {
            obj.insert(format!("{role}_token"), rng.pick(&token_values()));
        }
        5 => {
            let list: Vec<Value> = (0..rng.below(4))
                .map(|_| rng.pick(&token_values()))
                .collect();
            let values = [Value::Array(list), rng.pick(&token_values())];
            obj.insert("additional_special_tokens".into(), rng.pick(&values));
        }
        6 | 7 => {
            let decoder = obj
                .entry("added_tokens_decoder")
                .or_insert_with(|| json!({"4": {"content": "[MASK]", "special": true}}));
            let Some(map) = decoder.as_object_mut() else {
                *decoder = json!({});
                return;
            };
            let keys: Vec<String> = map.keys().cloned().collect();
            let key = keys.get(rng.below(keys.len())).cloned().unwrap_or_default();
            let value = map.remove(&key).unwrap_or(json!({"content": "[SEP]"}));
            match rng.below(3) {
                0 => map.insert(key, rng.pick(&token_values())),
                1 => map.insert(rng.pick(DECODER_KEYS).to_string(), value),
                _ => map.insert(
                    rng.pick(DECODER_KEYS).to_string(),
                    rng.pick(&token_values()),
                ),
            };
        }
        8 => {
            let keys: Vec<String> = obj.keys().cloned().collect();
            if let Some(key) = keys.get(rng.below(keys.len())) {
                obj.remove(key);
            }
        }
        _ => {
            let keys = [
                format!("{role}_token"),
                format!("{role}_token_id"),
                "additional_special_tokens".into(),
                "added_tokens_decoder".into(),
            ];
            obj.insert(rng.pick(&keys), json!(DEEP));
        }
    }
}

/// One mutation of the side file `bytes`: [`edit_side`] on its object
/// (as [`mutate_json`] when it is none), its text mutated, or it made
/// another JSON document or empty.
fn mutate_side(rng: &mut Rng, bytes: &mut Vec<u8>) {
    let parsed = serde_json::from_slice::<Value>(bytes);
    match (rng.below(16), parsed) {
        (0 | 1, _) | (_, Err(_)) => mutate_json(rng, bytes),
        (2, _) => {
            let documents: [&[u8]; 6] = [b"", b"[]", b"null", b"\"x\"", b"7", b"{}"];
            *bytes = rng.pick(&documents).to_vec();
        }
        (_, Ok(Value::Object(mut obj))) => {
            edit_side(rng, &mut obj);
            let text = serde_json::to_string_pretty(&obj).unwrap();
            *bytes = text.replace(&format!("{DEEP:?}"), &deep(rng)).into_bytes();
        }
        (_, Ok(_)) => mutate_json(rng, bytes),
    }
}

/// How a run of the side files went.
#[derive(Debug)]
struct SideOutcome {
    /// Mutants tried.
    count: u64,
    /// Mutants whose vocabulary loaded and went through every command.
    answered: u64,
    /// Mutants that also went through the binary.
    binary: u64,
    /// The first panic: where, what, and where its input was kept.
    panic: Option<String>,
}

/// Runs side-file mutations until `done(count)`, stopping at the first
/// panic: each mutant's vocabulary is loaded and queried, then goes
/// through the commands in-process; every 64th also through the binary.
fn run_side(seed: u64, done: impl Fn(u64) -> bool) -> SideOutcome {
    let sides = sides();
    let stock: Vec<Vec<u8>> = SIDE_FILES
        .iter()
        .map(|f| std::fs::read(fixtures().join("llama-sharded").join(f)).unwrap())
        .collect();
    let mut rng = Rng(seed);
    let mut out = SideOutcome {
        count: 0,
        answered: 0,
        binary: 0,
        panic: None,
    };
    while !done(out.count) {
        let s = &sides[rng.below(sides.len())];
        let dir = s.dir.path();
        let mutated = rng.below(SIDE_FILES.len());
        for (k, file) in SIDE_FILES.iter().enumerate() {
            let path = dir.join(file);
            let mut bytes = match (&s.originals[k], rng.below(4)) {
                (Some(original), _) => original.clone(),
                (None, 0) => stock[k].clone(),
                (None, _) => {
                    let _ = std::fs::remove_file(&path);
                    continue;
                }
            };
            if k == mutated || rng.below(4) == 0 {
                for _ in 0..1 + rng.below(3) {
                    mutate_side(&mut rng, &mut bytes);
                }
            }
            std::fs::write(&path, bytes).unwrap();
        }
        out.count += 1;
        let config: Option<Value> = std::fs::read(dir.join("config.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        let mut result = catch(|| {
            if let Ok(Some(v)) = Vocab::load(dir, config.as_ref()) {
                exercise(&v);
            }
            commands(dir).is_ok()
        });
        if out.count.is_multiple_of(64) && result.is_ok() {
            out.binary += 1;
            result = binary_answers(&["info"], dir)
                .and_then(|()| binary_answers(&["check"], dir))
                .and(result);
        }
        match result {
            Ok(answered) => out.answered += u64::from(answered),
            Err(msg) => {
                let kept = keep("side-files", seed, out.count, dir);
                out.panic = Some(panic_report(seed, out.count, s.name, &msg, &kept));
                break;
            }
        }
    }
    out
}

#[test]
fn the_side_file_fixtures_answer_before_any_mutation() {
    for s in sides() {
        let v = Vocab::load(s.dir.path(), None).unwrap().unwrap();
        assert!(!v.special_decls().is_empty(), "{}", s.name);
        commands(s.dir.path()).unwrap_or_else(|e| panic!("{}: {e}", s.name));
        binary_answers(&["check"], s.dir.path()).unwrap();
    }
}

#[test]
fn mutated_side_files_never_panic() {
    let out = run_side(11, |n| n >= 200);
    assert_eq!(out.panic, None);
    assert_eq!(out.binary, 3);
    // Both outcomes are exercised: most mutants still answer (a broken
    // special-token file or config.json is left out), some do not (a
    // broken tokenizer.json, which the tests' vocabulary load needs).
    assert!((20..195).contains(&out.answered), "{out:?}");
}

#[test]
#[ignore = "minutes of fuzzing: benches/fuzz.sh side_files"]
fn fuzz_side_files_for_minutes() {
    let secs = env_or("EMBSCOPE_FUZZ_SECS", 180);
    let seed = env_or("EMBSCOPE_FUZZ_SEED", 12345);
    let until = Instant::now() + Duration::from_secs(secs);
    let out = run_side(seed, |_| Instant::now() >= until);
    eprintln!(
        "fuzz-side-files: {} mutants ({} answered every command, {} also through the binary), \
         seed {seed}, {secs} s, panics: {:?}",
        out.count, out.answered, out.binary, out.panic
    );
    assert_eq!(out.panic, None);
}
