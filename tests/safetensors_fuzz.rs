//! Deterministic mutation fuzzing of the checkpoint opener on safetensors
//! files and their index: the 8-byte header length rewritten, the JSON
//! header edited as JSON (dtypes, shapes, `data_offsets` out of range,
//! reversed, overlapping or huge, tensors renamed, copied or dropped,
//! `__metadata__`) and as bytes, files cut short, data overwritten, the
//! index's weight map pointed at missing, foreign or odd files, and now
//! and then a value of `config.json` the roles and checks read. Each
//! mutant is opened and, when it opens, put through what `tensors`,
//! `size`, `info`, `lookup`, `check` and `undertrained` read, in-process;
//! every 64th also goes through the `embscope` binary (`info`, `check`),
//! whose exit code must be 0, 1 or 2. Any outcome but a panic (or a
//! crash) is fine. `fuzz_safetensors_for_minutes` (ignored;
//! `benches/fuzz.sh safetensors`) runs the same for `EMBSCOPE_FUZZ_SECS`
//! seconds.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use tempfile::TempDir;

use crate::common::fuzz::{
    Rng, binary_answers, catch, commands, env_or, keep, mutate_json, panic_report, scratch_copy,
};

/// A checkpoint to mutate: a scratch copy of a fixture, the files of it
/// that are mutated (with their original bytes), and what is opened.
struct Target {
    name: &'static str,
    dir: TempDir,
    /// The weights and the index.
    files: Vec<(PathBuf, Vec<u8>)>,
    /// `config.json`, mutated now and then, when there is one.
    config: Option<(PathBuf, Vec<u8>)>,
    /// The directory, or the one file opened.
    model: PathBuf,
}

/// The fixture checkpoints mutated: a sharded one with its index (opened
/// as a directory, by its index and by a shard), single files with a
/// config and tokenizer (F32 untied BERT, F16 tied), and bare files of
/// three dtypes opened by path.
fn targets() -> Vec<Target> {
    let target = |name, fixture, files: &[&str], open: Option<&str>| {
        let dir = scratch_copy(fixture);
        let read = |f: &str| {
            let path = dir.path().join(f);
            let bytes = std::fs::read(&path).ok()?;
            Some((path, bytes))
        };
        let files = files.iter().map(|f| read(f).unwrap()).collect();
        let config = read("config.json");
        let model = open.map_or_else(|| dir.path().to_path_buf(), |f| dir.path().join(f));
        Target {
            name,
            dir,
            files,
            config,
            model,
        }
    };
    let sharded = [
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
        "model.safetensors.index.json",
    ];
    vec![
        target("llama-sharded", "llama-sharded", &sharded, None),
        target(
            "llama-sharded by index",
            "llama-sharded",
            &sharded,
            Some(sharded[2]),
        ),
        target(
            "llama-sharded by a shard",
            "llama-sharded",
            &sharded,
            Some(sharded[0]),
        ),
        target("bert", "bert", &["model.safetensors"], None),
        target(
            "qwen-f16-tied",
            "qwen-f16-tied",
            &["model.safetensors"],
            None,
        ),
        target(
            "f32",
            "dtypes",
            &["f32.safetensors"],
            Some("f32.safetensors"),
        ),
        target(
            "bf16",
            "dtypes",
            &["bf16.safetensors"],
            Some("bf16.safetensors"),
        ),
        target(
            "f8_e4m3",
            "dtypes",
            &["f8_e4m3.safetensors"],
            Some("f8_e4m3.safetensors"),
        ),
    ]
}

/// Dtype names a header may hold: every known one, and near misses.
const DTYPES: &[&str] = &[
    "BOOL",
    "F4",
    "F6_E2M3",
    "F6_E3M2",
    "U8",
    "I8",
    "F8_E5M2",
    "F8_E4M3",
    "F8_E8M0",
    "F8_E4M3FNUZ",
    "F8_E5M2FNUZ",
    "I16",
    "U16",
    "F16",
    "BF16",
    "I32",
    "U32",
    "F32",
    "C64",
    "F64",
    "I64",
    "U64",
    "Q8_0",
    "Q4_K",
    "bf16",
    "F12",
    "",
];

/// The bits of an element of each dtype a header may name.
const BITS: &[(&str, u64)] = &[
    ("BOOL", 8),
    ("F4", 4),
    ("F6_E2M3", 6),
    ("F6_E3M2", 6),
    ("U8", 8),
    ("I8", 8),
    ("F8_E5M2", 8),
    ("F8_E4M3", 8),
    ("F8_E8M0", 8),
    ("F8_E4M3FNUZ", 8),
    ("F8_E5M2FNUZ", 8),
    ("I16", 16),
    ("U16", 16),
    ("F16", 16),
    ("BF16", 16),
    ("I32", 32),
    ("U32", 32),
    ("F32", 32),
    ("C64", 64),
    ("F64", 64),
    ("I64", 64),
    ("U64", 64),
];

/// Tensor names that change which tensor plays which role, or clash.
const NAMES: &[&str] = &[
    "model.embed_tokens.weight",
    "lm_head.weight",
    "embed_tokens.weight",
    "word_embeddings.weight",
    "embeddings.word_embeddings.weight",
    "model.norm.weight",
    "output.weight",
    "__metadata__",
    "",
];

/// A shape as a header writes it.
fn shape_of(entry: &Value) -> Vec<u64> {
    let dims = entry["shape"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    dims.iter().filter_map(Value::as_u64).collect()
}

/// `data_offsets` as a header writes them, `(0, 0)` when they are not two
/// integers.
fn offsets_of(entry: &Value) -> (u64, u64) {
    let at = |k: usize| entry["data_offsets"][k].as_u64().unwrap_or(0);
    (at(0), at(1))
}

/// One edit of the header `obj` of a file whose data area has `data_len`
/// bytes.
fn edit_header(rng: &mut Rng, obj: &mut Map<String, Value>, data_len: u64) {
    let names: Vec<String> = obj
        .keys()
        .filter(|k| *k != "__metadata__")
        .cloned()
        .collect();
    let Some(name) = names.get(rng.below(names.len())).cloned() else {
        let n = rng.below(64) as u64;
        obj.insert(
            "lm_head.weight".into(),
            json!({"dtype": "F32", "shape": [n], "data_offsets": [0, 4 * n]}),
        );
        return;
    };
    let entry = obj[&name].clone();
    let shape = shape_of(&entry);
    let elements = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d));
    let elements = elements.unwrap_or(0);
    let (a, b) = offsets_of(&entry);
    let other = obj[&names[rng.below(names.len())]].clone();
    let slot = obj.get_mut(&name).unwrap();
    if !slot.is_object() {
        // Edited into something else before: an entry again.
        *slot = json!({"dtype": "F32", "shape": [1], "data_offsets": [0, 4]});
        return;
    }
    match rng.below(12) {
        0 => slot["dtype"] = json!(rng.pick(DTYPES)),
        1 => {
            let rows = shape.first().copied().unwrap_or(1);
            let cols = shape.get(1).copied().unwrap_or(1);
            let shapes = [
                json!([]),
                json!([0]),
                json!([0, cols]),
                json!([u64::MAX]),
                json!([1u64 << 32, 1u64 << 32]),
                json!([-1, cols]),
                json!([1.5]),
                json!(["3"]),
                json!([rows, cols, 1]),
                json!([cols, rows]),
                json!([rows.saturating_add(1), cols]),
                json!([rows.saturating_sub(1), cols]),
                json!(null),
                json!(7),
            ];
            slot["shape"] = rng.pick(&shapes);
        }
        2 => {
            // Another shape with as many elements: a valid file whose
            // matrices disagree with the config.
            let divisors: Vec<u64> = (1..=elements.min(4096))
                .filter(|d| elements.is_multiple_of(*d))
                .collect();
            let d = divisors
                .get(rng.below(divisors.len()))
                .copied()
                .unwrap_or(1);
            let shapes = [
                json!([elements / d, d]),
                json!([elements]),
                json!([d, elements / d, 1]),
            ];
            slot["shape"] = rng.pick(&shapes);
        }
        3 => {
            let half = a + (b.max(a) - a) / 2;
            let offsets = [
                json!([b, a]),
                json!([a, a]),
                json!([0, data_len]),
                json!([a, data_len.saturating_add(1)]),
                json!([u64::MAX - 1, u64::MAX]),
                json!([a, half]),
                json!([a.saturating_add(1), b.saturating_add(1)]),
                json!([-1, b]),
                json!([a as f64 + 0.5, b]),
                json!([1e30, 1e30]),
                json!([a]),
                json!([a, b, b]),
                json!(null),
                other["data_offsets"].clone(),
            ];
            slot["data_offsets"] = rng.pick(&offsets);
        }
        4 => {
            let key = rng.pick(&["dtype", "shape", "data_offsets"]);
            if let Some(fields) = slot.as_object_mut() {
                fields.remove(key);
            }
        }
        5 => {
            obj.remove(&name);
        }
        6 => {
            obj.remove(&name);
            obj.insert(rng.pick(NAMES).to_string(), entry);
        }
        7 => {
            obj.insert(rng.pick(NAMES).to_string(), entry);
        }
        8 => {
            let metadata = [
                json!({"format": "pt"}),
                json!({"x": 1}),
                json!([]),
                json!("pt"),
                json!(null),
            ];
            obj.insert("__metadata__".into(), rng.pick(&metadata));
        }
        9 => {
            let values = [json!(1), json!("x"), json!([]), json!(null), json!({})];
            *slot = rng.pick(&values);
        }
        10 => {
            // Another dtype over the same bytes, the shape made to fit:
            // a valid file with a matrix of any type.
            let (dtype, bits) = rng.pick(BITS);
            let total = (b.max(a) - a).saturating_mul(8);
            let elements = total / bits;
            let cols = rng
                .pick(&[shape.get(1).copied().unwrap_or(1), 1, 4, 32])
                .max(1);
            if elements.is_multiple_of(cols) && elements * bits == total {
                slot["dtype"] = json!(dtype);
                slot["shape"] = json!([elements / cols, cols]);
            }
        }
        _ => {
            let at = b.min(data_len);
            obj.insert(
                rng.pick(NAMES).to_string(),
                json!({"dtype": rng.pick(DTYPES), "shape": [0, 32], "data_offsets": [at, at]}),
            );
        }
    }
}

/// A safetensors file's JSON header and data area, when its length prefix
/// and header are sound.
fn split(bytes: &[u8]) -> Option<(Map<String, Value>, &[u8])> {
    let n = usize::try_from(u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?)).ok()?;
    let header = bytes.get(8..8usize.checked_add(n)?)?;
    let Value::Object(obj) = serde_json::from_slice(header).ok()? else {
        return None;
    };
    Some((obj, &bytes[8 + n..]))
}

/// The file of header `json` (padded with `pad` spaces) and `data`.
fn join(json: &[u8], pad: usize, data: &[u8]) -> Vec<u8> {
    let mut out = ((json.len() + pad) as u64).to_le_bytes().to_vec();
    out.extend_from_slice(json);
    out.resize(out.len() + pad, b' ');
    out.extend_from_slice(data);
    out
}

/// One random mutation of the safetensors file `bytes`.
fn mutate_safetensors(rng: &mut Rng, bytes: &mut Vec<u8>) {
    let n = bytes
        .get(..8)
        .map_or(0, |p| u64::from_le_bytes(p.try_into().unwrap()));
    let header_end =
        usize::try_from(n).map_or(bytes.len(), |n| n.saturating_add(8).min(bytes.len()));
    match rng.below(8) {
        0 if bytes.len() >= 8 => {
            let len = bytes.len() as u64;
            let lengths = [
                n.wrapping_add(1),
                n.wrapping_sub(1),
                n.wrapping_add(8),
                0,
                1,
                7,
                len - 8,
                len - 7,
                len,
                100_000_000,
                100_000_001,
                u64::MAX,
                1 << 63,
                rng.next(),
            ];
            bytes[..8].copy_from_slice(&rng.pick(&lengths).to_le_bytes());
        }
        1..=3 => {
            let Some((mut obj, data)) = split(bytes) else {
                return mutate_json(rng, bytes);
            };
            edit_header(rng, &mut obj, data.len() as u64);
            let json = serde_json::to_vec(&obj).unwrap();
            let pad = rng.pick(&[0, (8 - json.len() % 8) % 8, 1]);
            *bytes = join(&json, pad, data);
        }
        4 => {
            // The header's bytes, its length prefix kept or made to fit.
            let mut header = bytes[8.min(header_end)..header_end].to_vec();
            mutate_json(rng, &mut header);
            let data = bytes[header_end..].to_vec();
            let fit = rng.below(2) == 0;
            let prefix = if fit { header.len() as u64 } else { n };
            *bytes = prefix.to_le_bytes().to_vec();
            bytes.extend_from_slice(&header);
            bytes.extend_from_slice(&data);
        }
        5 => {
            let at = match rng.below(2) {
                0 => rng.below(header_end + 1),
                _ => header_end + rng.below(bytes.len() - header_end + 1),
            };
            bytes.truncate(at);
        }
        6 if bytes.len() > header_end => {
            // Values: zeros, NaN, huge, tiny and negative ones, and the
            // infinities of BF16, F16 and F32, from a 4-byte boundary.
            let patterns: &[&[u8]] = &[
                &[0x00],
                &[0xFF],
                &[0x7F],
                &[0x80],
                &[0x80, 0x7F],
                &[0x00, 0x7C],
                &[0x00, 0x00, 0x80, 0x7F],
                &[0x00, 0x00, 0x80, 0xFF],
            ];
            let pattern = rng.pick(patterns);
            let at = header_end + (rng.below(bytes.len() - header_end) & !3);
            let len = (1 + rng.below(256)).min(bytes.len() - at);
            let fill = pattern.iter().cycle().take(len);
            bytes[at..at + len]
                .iter_mut()
                .zip(fill)
                .for_each(|(b, &v)| *b = v);
        }
        _ => {
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(header_end.max(1).min(bytes.len()));
                if let Some(b) = bytes.get_mut(at) {
                    *b ^= 1 << rng.below(8);
                }
            }
        }
    }
}

/// One random mutation of the index JSON `bytes`.
fn mutate_index(rng: &mut Rng, bytes: &mut Vec<u8>) {
    let Ok(mut index) = serde_json::from_slice::<Value>(bytes) else {
        return mutate_json(rng, bytes);
    };
    let Some(map) = index["weight_map"].as_object_mut() else {
        return mutate_json(rng, bytes);
    };
    let names: Vec<String> = map.keys().cloned().collect();
    let name = names
        .get(rng.below(names.len()))
        .cloned()
        .unwrap_or_default();
    match rng.below(6) {
        0 => {
            let files = [
                json!(""),
                json!(".."),
                json!("../model-00001-of-00002.safetensors"),
                json!("a/b.safetensors"),
                json!("missing.safetensors"),
                json!("model-00001-of-00002.safetensors"),
                json!("model-00002-of-00002.safetensors"),
                json!("model.safetensors.index.json"),
                json!("config.json"),
                json!("tokenizer.json"),
                json!(5),
                json!(null),
                json!([]),
            ];
            map.insert(name, rng.pick(&files));
        }
        1 => {
            map.remove(&name);
        }
        2 => {
            let shard = rng.pick(&["model-00001-of-00002.safetensors", "missing.safetensors"]);
            map.insert(rng.pick(NAMES).to_string(), json!(shard));
        }
        3 => {
            let maps = [json!([]), json!({}), json!("x"), json!(null)];
            index["weight_map"] = rng.pick(&maps);
        }
        _ => return mutate_json(rng, bytes),
    }
    *bytes = serde_json::to_vec_pretty(&index).unwrap();
}

/// One random mutation of the `config.json` `bytes`: a value the roles,
/// the tie and the special-token checks read set to an edge case, or the
/// text mutated.
fn mutate_config(rng: &mut Rng, bytes: &mut Vec<u8>) {
    let Ok(Value::Object(mut config)) = serde_json::from_slice::<Value>(bytes) else {
        return mutate_json(rng, bytes);
    };
    if rng.below(4) == 0 {
        return mutate_json(rng, bytes);
    }
    let keys = [
        "vocab_size",
        "hidden_size",
        "tie_word_embeddings",
        "bos_token_id",
        "eos_token_id",
        "pad_token_id",
        "architectures",
        "model_type",
        "torch_dtype",
        "text_config",
    ];
    let values = [
        json!(0),
        json!(1),
        json!(-1),
        json!(31),
        json!(32),
        json!(340),
        json!(341),
        json!(342),
        json!(u32::MAX),
        json!(u64::MAX),
        json!(1e30),
        json!(1.5),
        json!("7"),
        json!(null),
        json!(true),
        json!([1, 340, -1]),
        json!([]),
        json!({}),
        json!({"vocab_size": 1, "eos_token_id": 7}),
        json!(["LlamaForCausalLM"]),
        json!("bfloat16"),
    ];
    config.insert(rng.pick(&keys).to_string(), rng.pick(&values));
    *bytes = serde_json::to_vec_pretty(&config).unwrap();
}

/// How a run went.
#[derive(Debug)]
struct Outcome {
    /// Mutants tried.
    count: u64,
    /// Mutants that opened and went through every command.
    answered: u64,
    /// Mutants that also went through the binary.
    binary: u64,
    /// The first panic: where, what, and where its input was kept.
    panic: Option<String>,
}

/// Runs mutations until `done(count)`, stopping at the first panic.
fn run(seed: u64, done: impl Fn(u64) -> bool) -> Outcome {
    let targets = targets();
    let mut rng = Rng(seed);
    let mut out = Outcome {
        count: 0,
        answered: 0,
        binary: 0,
        panic: None,
    };
    while !done(out.count) {
        let t = &targets[rng.below(targets.len())];
        let mut files: Vec<Vec<u8>> = t.files.iter().map(|(_, b)| b.clone()).collect();
        for _ in 0..1 + rng.below(2) {
            let k = rng.below(files.len());
            match t.files[k].0.extension().and_then(|e| e.to_str()) {
                Some("json") => mutate_index(&mut rng, &mut files[k]),
                _ => mutate_safetensors(&mut rng, &mut files[k]),
            }
        }
        for ((path, _), bytes) in t.files.iter().zip(&files) {
            std::fs::write(path, bytes).unwrap();
        }
        if let Some((path, original)) = &t.config {
            let mut config = original.clone();
            if rng.below(4) == 0 {
                mutate_config(&mut rng, &mut config);
            }
            std::fs::write(path, config).unwrap();
        }
        out.count += 1;
        let mut result = catch(|| commands(&t.model)).map(|r| r.is_ok());
        if out.count.is_multiple_of(64) && result.is_ok() {
            out.binary += 1;
            result = binary_answers(&["info"], &t.model)
                .and_then(|()| binary_answers(&["check"], &t.model))
                .and(result);
        }
        match result {
            Ok(answered) => out.answered += u64::from(answered),
            Err(msg) => {
                let kept = keep("safetensors", seed, out.count, t.dir.path());
                out.panic = Some(panic_report(seed, out.count, t.name, &msg, &kept));
                break;
            }
        }
    }
    out
}

#[test]
fn the_targets_answer_before_any_mutation() {
    for t in targets() {
        commands(&t.model).unwrap_or_else(|e| panic!("{}: {e}", t.name));
        binary_answers(&["check"], &t.model).unwrap();
    }
}

#[test]
fn mutated_safetensors_never_panic() {
    let out = run(5, |n| n >= 400);
    assert_eq!(out.panic, None);
    assert_eq!(out.binary, 6);
    // Both outcomes are exercised: many mutants still open, many do not.
    assert!((20..380).contains(&out.answered), "{out:?}");
}

#[test]
#[ignore = "minutes of fuzzing: benches/fuzz.sh safetensors"]
fn fuzz_safetensors_for_minutes() {
    let secs = env_or("EMBSCOPE_FUZZ_SECS", 180);
    let seed = env_or("EMBSCOPE_FUZZ_SEED", 12345);
    let until = Instant::now() + Duration::from_secs(secs);
    let out = run(seed, |_| Instant::now() >= until);
    eprintln!(
        "fuzz-safetensors: {} mutants ({} answered every command, {} also through the binary), \
         seed {seed}, {secs} s, panics: {:?}",
        out.count, out.answered, out.binary, out.panic
    );
    assert_eq!(out.panic, None);
}
