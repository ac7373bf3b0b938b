//! GGUF checkpoints: the six commands on every GGUF fixture (each tie state,
//! each quantization), values and neighbours against candle's own
//! dequantization, `check` findings on quantized data, and every broken
//! file as a one-line error with exit code 2.

use std::io::Cursor;

use candle_core::Device;
use candle_core::quantized::gguf_file::Content;
use serde_json::Value;

use crate::common::{cosine, cosine_top_k, embscope, fails, fixture, ids, json, text};
use crate::regenerate::gguf as gguf_gen;

/// (fixture, dtype of token_embd, rows, hidden, head dtype when stored).
const FIXTURES: &[(&str, &str, usize, usize, Option<&str>)] = &[
    ("gguf/llama-f32-untied.gguf", "F32", 373, 32, Some("F16")),
    ("gguf/llama-q8_0-tied.gguf", "Q8_0", 373, 32, None),
    ("gguf/gpt2-f16-tied.gguf", "F16", 341, 32, None),
    ("gguf/gpt2-q4_k-untied.gguf", "Q4_K", 341, 256, Some("Q4_K")),
];

/// Broken files and the words their error must contain.
const BROKEN: &[(&str, &str)] = &[
    ("bad-magic.gguf", "not a GGUF file (starts with `GGUX`"),
    ("beyond-file.gguf", "reaches beyond the end of the file"),
    (
        "huge-array.gguf",
        "`tokenizer.ggml.tokens`: array of 1099511627776 values",
    ),
    (
        "misaligned.gguf",
        "data offset 4, not a multiple of the alignment 32",
    ),
    ("overlap.gguf", "overlap"),
    (
        "duplicate-tensor.gguf",
        "declares 2 tensors, 1 distinct names found",
    ),
    (
        "unknown-type.gguf",
        "a tensor has ggml type 99, which embscope does not know",
    ),
    (
        "partial-block.gguf",
        "rows of 20 values, not a multiple of the 32-value block",
    ),
    ("truncated-header.gguf", "need at least 24 bytes; 6 left"),
    (
        "no-data.gguf",
        "tensor data starts at byte 96, beyond the end of the file (81 bytes); truncated?",
    ),
    (
        "truncated.gguf",
        "reaches beyond the end of the file (1020 bytes); truncated?",
    ),
    ("version-1.gguf", "GGUF version 1 is not supported"),
    ("zero-alignment.gguf", "`general.alignment` is 0"),
];

/// A matrix of the fixture as candle reads and dequantizes it, row-major.
fn candle_rows(rel: &str, name: &str) -> Vec<Vec<f32>> {
    let bytes = std::fs::read(fixture(rel)).unwrap();
    let mut r = Cursor::new(&bytes);
    let content = Content::read(&mut r).unwrap();
    let q = content.tensor(&mut r, name, &Device::Cpu).unwrap();
    q.dequantize(&Device::Cpu)
        .unwrap()
        .to_vec2::<f32>()
        .unwrap()
}

fn values(row: &Value) -> Vec<f32> {
    row["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

#[test]
fn info_reports_roles_shapes_tie_and_metadata() {
    for &(rel, dtype, rows, hidden, head) in FIXTURES {
        let v = json(&["info", &fixture(rel)]);
        assert_eq!(v["format"], "gguf", "{rel}");
        assert_eq!(v["embedding"]["name"], "token_embd.weight", "{rel}");
        assert_eq!(v["embedding"]["shape"], serde_json::json!([rows, hidden]));
        assert_eq!(v["embedding"]["dtype"], dtype, "{rel}");
        assert_eq!(v["files"][0]["kind"], "gguf");
        assert_eq!(v["config"]["hidden_size"], hidden, "{rel}");
        assert_eq!(v["config"]["vocab_size"], rows, "{rel}");
        let arch = if rel.contains("llama") {
            "llama"
        } else {
            "gpt2"
        };
        assert_eq!(v["config"]["model_type"], arch);
        assert_eq!(v["config"]["name"], format!("embscope {arch} fixture"));
        match head {
            Some(h) => {
                assert_eq!(v["head"]["name"], "output.weight", "{rel}");
                assert_eq!(v["head"]["dtype"], h, "{rel}");
                assert_eq!(v["tie"]["status"], "untied", "{rel}");
                assert_eq!(v["tie"]["resolved"], false);
            }
            None => {
                assert!(v["head"].is_null(), "{rel}");
                assert_eq!(v["tie"]["status"], "tied", "{rel}");
                assert_eq!(v["tie"]["resolved"], true);
            }
        }
    }
    let q4 = json(&["info", &fixture("gguf/gpt2-q4_k-untied.gguf")]);
    assert_eq!(q4["config"]["file_type"], "Q4_K_M (15)");
    let out = text(&["info", "fixtures/gguf/llama-q8_0-tied.gguf"], 0);
    assert!(
        out.contains("GGUF has no tie flag (tied when no `output.weight` is stored)"),
        "{out}"
    );
    assert!(out.contains("file_type Q8_0 (7)"), "{out}");
}

#[test]
fn tensors_lists_every_tensor_with_gguf_types() {
    let v = json(&["tensors", &fixture("gguf/gpt2-q4_k-untied.gguf")]);
    let rows: Vec<(String, String, Value, u64)> = v["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["dtype"].as_str().unwrap().to_string(),
                t["shape"].clone(),
                t["bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (
                "output.weight".into(),
                "Q4_K".into(),
                serde_json::json!([341, 256]),
                341 * 144
            ),
            (
                "output_norm.weight".into(),
                "F32".into(),
                serde_json::json!([256]),
                1024
            ),
            (
                "token_embd.weight".into(),
                "Q4_K".into(),
                serde_json::json!([341, 256]),
                341 * 144
            ),
        ]
    );
    for &(rel, dtype, ..) in FIXTURES {
        let v = json(&["tensors", &fixture(rel), "--filter", "token_embd*"]);
        assert_eq!(v["tensors"][0]["dtype"], dtype, "{rel}");
    }
}

#[test]
fn size_reports_bits_per_weight_and_gguf_what_ifs() {
    let v = json(&["size", &fixture("gguf/llama-q8_0-tied.gguf")]);
    assert_eq!(v["by_dtype"][0]["dtype"], "Q8_0");
    assert_eq!(v["by_dtype"][0]["bits_per_weight"], 8.5);
    assert_eq!(v["by_dtype"][0]["bytes"], 373 * 34);
    assert_eq!(v["embedding_bytes"], 373 * 34);
    assert_eq!(v["tying"]["tied"], true);
    let untied = json(&["size", &fixture("gguf/gpt2-q4_k-untied.gguf")]);
    assert_eq!(untied["by_dtype"][0]["bits_per_weight"], 4.5);
    assert_eq!(untied["head_bytes"], 341 * 144);
    assert_eq!(untied["tying"]["bytes"], 341 * 144);
    // What if the Q4_K model were Q6_K (spelled any case): 210 bytes per 256 values.
    for spelling in ["q6_k", "Q6K"] {
        let w = json(&[
            "size",
            &fixture("gguf/gpt2-q4_k-untied.gguf"),
            "--dtype",
            spelling,
        ])["what_if"]
            .clone();
        assert_eq!(w["dtype"], "Q6_K");
        assert_eq!(w["total_bytes"], 2 * 341 * 210 + 210, "{spelling}");
    }
    let out = text(&["size", "fixtures/gguf/gpt2-q4_k-untied.gguf"], 0);
    assert!(out.contains("bits/weight"), "{out}");
    assert!(out.contains("4.5000"), "{out}");
    fails(
        &[
            "size",
            &fixture("gguf/llama-q8_0-tied.gguf"),
            "--dtype",
            "q3_x",
        ],
        "--dtype `q3_x` is not a floating-point dtype",
    );
}

#[test]
fn lookup_dequantizes_rows_like_candle() {
    for &(rel, _, rows, ..) in FIXTURES {
        let want = candle_rows(rel, "token_embd.weight");
        let last = (rows - 1).to_string();
        let v = json(&[
            "lookup",
            &fixture(rel),
            "--id",
            "0",
            "--id",
            "123",
            "--id",
            &last,
        ]);
        let got = v["rows"].as_array().unwrap();
        assert_eq!(got.len(), 3, "{rel}: one row per --id");
        for (row, id) in got.iter().zip([0, 123, rows - 1]) {
            assert_eq!(values(row), want[id], "{rel} row {id}");
        }
    }
    // The head of an untied file, the embedding of a tied one.
    let head = json(&[
        "lookup",
        &fixture("gguf/gpt2-q4_k-untied.gguf"),
        "--matrix",
        "head",
        "--id",
        "7",
    ]);
    assert_eq!(head["matrix"], "output.weight");
    let want = candle_rows("gguf/gpt2-q4_k-untied.gguf", "output.weight");
    assert_eq!(values(&head["rows"][0]), want[7]);
    let tied = json(&[
        "lookup",
        &fixture("gguf/llama-q8_0-tied.gguf"),
        "--matrix",
        "head",
        "--id",
        "7",
    ]);
    assert_eq!(tied["matrix"], "token_embd.weight");
    fails(
        &[
            "lookup",
            &fixture("gguf/llama-q8_0-tied.gguf"),
            "--id",
            "373",
        ],
        "id 373 is out of range: `token_embd.weight` has 373 rows",
    );
}

#[test]
fn neighbors_on_quantized_matrices_match_the_dequantized_f32_matrix() {
    for (rel, matrix, name, query) in [
        (
            "gguf/llama-q8_0-tied.gguf",
            "embed",
            "token_embd.weight",
            300,
        ),
        (
            "gguf/llama-q8_0-tied.gguf",
            "embed",
            "token_embd.weight",
            12,
        ),
        (
            "gguf/gpt2-q4_k-untied.gguf",
            "embed",
            "token_embd.weight",
            100,
        ),
        ("gguf/gpt2-q4_k-untied.gguf", "head", "output.weight", 200),
        ("gguf/gpt2-f16-tied.gguf", "embed", "token_embd.weight", 5),
        ("gguf/llama-f32-untied.gguf", "head", "output.weight", 42),
    ] {
        let rows: Vec<Vec<f64>> = candle_rows(rel, name).iter().map(|r| widen(r)).collect();
        let want = cosine_top_k(&rows, query, 10);
        let v = json(&[
            "neighbors",
            &fixture(rel),
            "--matrix",
            matrix,
            &format!("#{query}"),
            "-k",
            "10",
        ]);
        let got = v["queries"][0]["results"].as_array().unwrap();
        assert_eq!(got.len(), 10);
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g["id"].as_u64().unwrap(), w.0, "{rel} {name} #{query}");
            let s = g["score"].as_f64().unwrap();
            assert!((s - w.1).abs() < 1e-5, "{rel} #{query}: {s} vs {}", w.1);
        }
    }
}

#[test]
fn neighbors_finds_planted_words_in_quantized_rows() {
    // `Paris` is planted nearest `France` in both vocabularies.
    let (llama, gpt2) = (gguf_gen::llama_vocab(), gguf_gen::gpt2_vocab());
    for (rel, words) in [
        ("gguf/llama-q8_0-tied.gguf", &llama.words),
        ("gguf/llama-f32-untied.gguf", &llama.words),
        ("gguf/gpt2-q4_k-untied.gguf", &gpt2.words),
        ("gguf/gpt2-f16-tied.gguf", &gpt2.words),
        ("gguf/gpt2-iq4_xs-untied.gguf", &gpt2.words),
    ] {
        let (paris, france) = (words[6].0, words[7].0);
        let v = json(&["neighbors", &fixture(rel), &format!("#{paris}"), "-k", "1"]);
        assert_eq!(v["queries"][0]["results"][0]["id"], france, "{rel}");
    }
}

#[test]
fn check_on_gguf() {
    let run = |rel: &str| -> (i32, Value) {
        let out = embscope()
            .args(["--json", "check", &fixture(rel)])
            .output()
            .unwrap();
        let v = serde_json::from_slice(&out.stdout).unwrap();
        (out.status.code().unwrap(), v)
    };
    let codes = |v: &Value, sev: &str| -> Vec<String> {
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["severity"] == sev)
            .map(|f| f["code"].as_str().unwrap().to_string())
            .collect()
    };
    for &(rel, ..) in FIXTURES {
        let (code, v) = run(rel);
        assert_eq!(code, 0, "{rel}: {v}");
        assert!(codes(&v, "error").is_empty(), "{rel}: {v}");
        assert!(codes(&v, "warn").is_empty(), "{rel}: {v}");
        assert_eq!(v["embedding"], "token_embd.weight");
    }
    let (code, v) = run("gguf/zero-nan-rows-q8_0.gguf");
    assert_eq!(code, 1);
    assert_eq!(codes(&v, "error"), ["non-finite-values"]);
    assert_eq!(codes(&v, "warn"), ["zero-rows"]);
    let f = &v["findings"][0];
    assert_eq!(f["evidence"]["nan_rows"], 1);
    assert_eq!(f["evidence"]["ids"][0]["id"], 5);
    assert_eq!(v["findings"][1]["evidence"]["ids"][0]["id"], 3);
    assert_eq!(v["findings"][1]["evidence"]["ids"][1]["id"], 4);
    let (code, v) = run("gguf/untied-identical-q8_0.gguf");
    assert_eq!(code, 0);
    let same = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "untied-head-identical")
        .expect("untied-head-identical");
    assert_eq!(same["evidence"]["head"], "output.weight");
    assert_eq!(same["evidence"]["bytes"], 373 * 34);
    let (code, v) = run("gguf/vocab-size-mismatch.gguf");
    assert_eq!(code, 1);
    assert_eq!(codes(&v, "error"), ["config-vocab-mismatch"]);
    assert_eq!(
        v["findings"][0]["message"],
        "GGUF `llama.vocab_size` is 381, `token_embd.weight` has 373 rows: loading fails with a size mismatch"
    );
}

#[test]
fn a_gguf_without_vocabulary_says_so_where_a_vocabulary_is_needed() {
    let rel = "gguf/llama-q8_0-no-vocab.gguf";
    let f = fixture(rel);
    let missing = format!("no vocabulary in the GGUF metadata of `{f}`");
    for (args, what, instead) in [
        (
            &["neighbors", &f, "king"][..],
            "query `king`",
            "query rows as #ID",
        ),
        (&["lookup", &f, "--token", "king"], "--token", "use --id"),
        (&["lookup", &f, "--text", "king"], "--text", "use --id"),
    ] {
        let err = fails(
            args,
            &format!("{what} needs a tokenizer, and there is {missing}; {instead}"),
        );
        assert!(!err.contains("tokenizer.json"), "{err}");
    }
    // Rows by id need none: the result is unnamed.
    let v = json(&["neighbors", &f, "#5", "-k", "1"]);
    assert_eq!(v["queries"][0]["results"][0]["token"], Value::Null);
    let v = json(&["check", &f]);
    let finding = &v["findings"][0];
    assert_eq!(finding["code"], "no-tokenizer");
    assert_eq!(
        finding["message"],
        "no vocabulary read from the GGUF metadata: checks against the tokenizer are skipped"
    );
    let v = json(&["undertrained", &f]);
    assert_eq!(v["reference"]["rows"], 0);
    assert_eq!(v["indicators"], serde_json::json!(["embed_norm"]));
    assert_eq!(
        v["notes"][0],
        format!(
            "{missing}, so no reference rows: scores use the row norms only; give known-untrained ids with --reference"
        )
    );
}

#[test]
fn every_broken_file_is_one_line_exit_2_for_every_command() {
    let mut on_disk: Vec<String> = std::fs::read_dir(fixture("gguf/broken"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = BROKEN.iter().map(|(n, _)| n.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed, "every broken fixture is tested");
    for (name, needle) in BROKEN {
        let path = fixture(&format!("gguf/broken/{name}"));
        for args in [
            vec!["info", &path],
            vec!["tensors", &path],
            vec!["size", &path],
            vec!["lookup", &path, "--id", "0"],
            vec!["neighbors", &path, "#0"],
            vec!["check", &path],
        ] {
            let err = fails(&args, needle);
            assert!(err.contains(&format!("`{path}`: ")), "{err}");
        }
    }
}

#[test]
fn a_directory_with_one_gguf_is_that_file_several_are_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture("gguf/llama-q8_0-tied.gguf"),
        tmp.path().join("model-Q8_0.gguf"),
    )
    .unwrap();
    let dir = tmp.path().display().to_string();
    let v = json(&["info", &dir]);
    assert_eq!(v["embedding"]["dtype"], "Q8_0");
    assert!(
        v["files"][0]["path"]
            .as_str()
            .unwrap()
            .ends_with("model-Q8_0.gguf")
    );
    std::fs::copy(
        fixture("gguf/gpt2-f16-tied.gguf"),
        tmp.path().join("model-F16.gguf"),
    )
    .unwrap();
    fails(
        &["info", &dir],
        "2 .gguf files (model-F16.gguf, model-Q8_0.gguf); name one of them as MODEL",
    );
}

/// The IQ fixtures: `gpt2-iq4_xs-untied.gguf` (embedding IQ4_XS, head
/// IQ4_NL, a layer IQ3_S) and `llama-iq3_s-tied.gguf` (embedding IQ3_S,
/// the rows `planted(llama, 512, 18)`).
const IQ4: &str = "gguf/gpt2-iq4_xs-untied.gguf";
const IQ3: &str = "gguf/llama-iq3_s-tied.gguf";

#[test]
fn files_with_types_candle_lacks_are_read_and_iq4_rows_decoded() {
    let info = json(&["info", &fixture(IQ4)]);
    assert_eq!(info["embedding"]["dtype"], "IQ4_XS");
    assert_eq!(info["head"]["dtype"], "IQ4_NL");
    assert_eq!(info["config"]["file_type"], "IQ4_XS (30)", "{info}");
    let tensors = json(&["tensors", &fixture(IQ4)]);
    let layer = tensors["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "blk.0.ffn_down.weight")
        .expect("the IQ3_S layer is listed");
    assert_eq!(layer["dtype"], "IQ3_S");
    assert_eq!(layer["bytes"], 440, "2 rows of 2 blocks of 110 bytes");
    let size = text(&["size", &format!("fixtures/{IQ4}")], 0);
    assert!(
        size.contains("IQ4_XS        1   87,296  45.3 KiB       4.2500"),
        "{size}"
    );
    // The decoded rows are the generator's rows, up to the 4-bit levels.
    let gpt2 = gguf_gen::gpt2_vocab();
    for (matrix, seed) in [("embed", 16), ("head", 17)] {
        let planted = gguf_gen::planted(&gpt2, gguf_gen::K_HIDDEN, seed);
        let v = json(&[
            "lookup",
            &fixture(IQ4),
            "--matrix",
            matrix,
            "--full",
            "--id",
            "5",
            "259",
        ]);
        for (row, id) in v["rows"].as_array().unwrap().iter().zip([5, 259]) {
            let cos = cosine(
                &widen(&values(row)),
                &widen(&planted[id * 256..(id + 1) * 256]),
            );
            assert!(
                cos > 0.99,
                "{matrix} row {id}: cosine {cos} to the rows quantized"
            );
        }
    }
    // Neighbours are the decoded rows' own (the head is IQ4_NL).
    let rows = decoded_rows(&fixture(IQ4), "head", 341);
    neighbors_are_the_rows_own(&fixture(IQ4), "head", &rows, 259);
}

/// `values` in f64.
fn widen(values: &[f32]) -> Vec<f64> {
    values.iter().map(|&x| f64::from(x)).collect()
}

/// Every row of `matrix` (`embed` or `head`) of `model`, `rows` of them,
/// as `lookup --full` gives them.
fn decoded_rows(model: &str, matrix: &str, rows: usize) -> Vec<Vec<f64>> {
    let ids: Vec<String> = (0..rows).map(|i| i.to_string()).collect();
    let mut args = vec!["lookup", model, "--matrix", matrix, "--full", "--id"];
    args.extend(ids.iter().map(String::as_str));
    json(&args)["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| widen(&values(r)))
        .collect()
}

/// Asserts that the 5 neighbours of row `id` in `matrix` of `model` are
/// the best 5 of `rows` by cosine, with their scores; returns them.
fn neighbors_are_the_rows_own(model: &str, matrix: &str, rows: &[Vec<f64>], id: u64) -> Vec<Value> {
    let want = cosine_top_k(rows, id as usize, 5);
    let query = format!("#{id}");
    let v = json(&["neighbors", model, "--matrix", matrix, &query, "-k", "5"]);
    let got = v["queries"][0]["results"].as_array().unwrap().clone();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g["id"].as_u64().unwrap(), w.0);
        assert!((g["score"].as_f64().unwrap() - w.1).abs() < 1e-6);
    }
    got
}

#[test]
fn iq3_s_rows_decode_through_the_codebook_and_every_command_reads_them() {
    let info = json(&["info", &fixture(IQ3)]);
    assert_eq!(info["embedding"]["dtype"], "IQ3_S");
    // The decoded rows are the generator's rows, up to the codebook.
    let llama = gguf_gen::llama_vocab();
    let planted = gguf_gen::planted(&llama, 512, 18);
    let iq3 = fixture(IQ3);
    let rows = decoded_rows(&iq3, "embed", llama.size);
    assert_eq!(rows.len(), llama.size);
    for (id, row) in rows.iter().enumerate() {
        let cos = cosine(row, &widen(&planted[id * 512..(id + 1) * 512]));
        assert!(cos > 0.9, "row {id}: cosine {cos} to the row quantized");
    }
    // Neighbours are the decoded rows' own, and the planted words hold.
    let got = neighbors_are_the_rows_own(&iq3, "embed", &rows, 317);
    assert_eq!(got[0]["token"], " France", "Paris → France: {got:?}");
    // `check` reads the values, and `undertrained` scores every row.
    let out = text(&["check", &format!("fixtures/{IQ3}")], 0);
    assert!(!out.contains("values-not-checked"), "{out}");
    assert!(out.contains("norm-summary"), "{out}");
    let u = json(&["undertrained", &iq3, "--top", "0", "--include-reference"]);
    assert_eq!(u["scored"], 373, "{u}");
    assert_eq!(
        ids(&u["candidates"]),
        [372, 371],
        "the two <unused> rows are the reference set, listed by score: {u}"
    );
}

/// `llama-f32-untied.gguf` cut in two as `gguf-split` cuts models.
const SPLIT: &str = "gguf/split";

#[test]
fn a_split_model_opens_whole_from_its_directory_or_any_split() {
    let neighbors = |model: &str| {
        json(&[
            "neighbors",
            model,
            "--matrix",
            "head",
            "king",
            "#42",
            "-k",
            "8",
        ])
    };
    let whole = neighbors(&fixture("gguf/llama-f32-untied.gguf"));
    for model in [
        fixture(SPLIT),
        fixture("gguf/split/llama-00001-of-00002.gguf"),
        fixture("gguf/split/llama-00002-of-00002.gguf"),
    ] {
        let info = json(&["info", &model]);
        assert_eq!(info["embedding"]["dtype"], "F32", "{model}");
        assert_eq!(info["head"]["name"], "output.weight", "{model}");
        assert_eq!(neighbors(&model), whole, "{model}");
    }
    let out = embscope()
        .args(["info", &fixture("gguf/split/llama-00002-of-00002.gguf")])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "note: llama-00002-of-00002.gguf is split 2 of 2; opening the whole model"
    );
}

#[test]
fn a_split_model_with_a_split_missing_or_misnamed_is_an_error() {
    let first = fixture("gguf/split/llama-00001-of-00002.gguf");
    let tmp = tempfile::tempdir().unwrap();
    let copy = |name: &str| {
        let p = tmp.path().join(name);
        std::fs::copy(&first, &p).unwrap();
        p.display().to_string()
    };
    // The second split is not there.
    let alone = copy("m-00001-of-00002.gguf");
    fails(&["info", &alone], "m-00002-of-00002.gguf");
    // A file claiming to be split 1 where split 2 belongs.
    copy("m-00002-of-00002.gguf");
    fails(&["info", &alone], "expected split 2 of 2");
    // Renamed: the other splits cannot be found.
    let renamed = copy("model.gguf");
    fails(
        &["info", &renamed],
        "split 1 of 2 of a model, but not named as `gguf-split` names splits (`NAME-00001-of-00002.gguf`)",
    );
}

#[test]
fn a_gguf_repository_in_the_hub_cache_opens_one_quantization_by_name() {
    // A snapshot as `hf download` leaves a GGUF repository: one file per
    // quantization, a split one in a folder of its own.
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("models--acme--tiny-GGUF");
    let snap = repo.join("snapshots/c0ffee");
    std::fs::create_dir_all(snap.join("F32")).unwrap();
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), "c0ffee").unwrap();
    let put = |from: &str, to: &str| std::fs::copy(fixture(from), snap.join(to)).unwrap();
    put("gguf/llama-q8_0-tied.gguf", "tiny-Q8_0.gguf");
    put("gguf/gpt2-q4_k-untied.gguf", "tiny-Q4_K_M.gguf");
    put(
        "gguf/split/llama-00001-of-00002.gguf",
        "F32/tiny-F32-00001-of-00002.gguf",
    );
    put(
        "gguf/split/llama-00002-of-00002.gguf",
        "F32/tiny-F32-00002-of-00002.gguf",
    );
    let run = |model: &str| {
        embscope()
            .env("HF_HUB_CACHE", tmp.path())
            .args(["--json", "info", model])
            .output()
            .unwrap()
    };
    for (model, dtype, head) in [
        ("acme/tiny-GGUF:Q8_0", "Q8_0", serde_json::Value::Null),
        ("acme/tiny-GGUF:q4_k_m", "Q4_K", "Q4_K".into()),
        ("acme/tiny-GGUF:F32", "F32", "F16".into()),
    ] {
        let out = run(model);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{model}: {err}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["embedding"]["dtype"], dtype, "{model}");
        assert_eq!(v["head"]["dtype"], head, "{model}");
        assert_eq!(v["hub"]["commit"], "c0ffee", "{model}");
    }
    // `Q4_K` is a piece of no name (`Q4_K_M` is another quantization).
    let out = run("acme/tiny-GGUF:Q4_K");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "embscope: `acme/tiny-GGUF:Q4_K`: none of the snapshot's .gguf files are named with `Q4_K` \
         (F32/tiny-F32-00001-of-00002.gguf, F32/tiny-F32-00002-of-00002.gguf, tiny-Q4_K_M.gguf, tiny-Q8_0.gguf)"
    );
}

#[test]
fn nvfp4_rows_are_read() {
    // ggml type 40: a 2 x 64 `token_embd.weight` of one NVFP4 block per
    // row. Row r: run scales 0x38 + 8 r (1 and 2, halved), every byte 0x71
    // (levels 1 and 12, doubled E2M1 0.5 and 6).
    let mut f = gguf_gen::raw(
        b"GGUF",
        3,
        &[],
        &[("token_embd.weight", &[64, 2], 40, 0)],
        0,
    );
    for r in 0..2u8 {
        f.extend([0x38 + 8 * r; 4]);
        f.extend([0x71; 32]);
    }
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("nvfp4.gguf");
    std::fs::write(&path, f).unwrap();
    let v = json(&["lookup", path.to_str().unwrap(), "--id", "0", "--id", "1"]);
    assert_eq!(v["dtype"], "NVFP4");
    for (r, d) in [(0, 0.5), (1, 1.0)] {
        let values: Vec<f64> = v["rows"][r]["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        let run: Vec<f64> = [[1.0; 8], [12.0; 8]]
            .concat()
            .iter()
            .map(|l| l * d)
            .collect();
        assert_eq!(values, run.repeat(4), "row {r}");
    }
}
