//! GGUF vocabularies read from the metadata, end to end: readable tokens,
//! `--token`, `--text` (SentencePiece-style llama and byte-level gpt2),
//! word queries and analogies on quantized matrices, and `check`'s
//! placeholder finding for `unused` token types.

use crate::common::{fixture, ids, json};
use crate::regenerate::gguf as gguf_gen;

/// (fixture, planted word rows of its vocabulary, tokenizer model, size).
fn fixtures() -> Vec<(&'static str, Vec<usize>, &'static str, u64)> {
    let llama: Vec<usize> = gguf_gen::llama_vocab().words.iter().map(|w| w.0).collect();
    let gpt2: Vec<usize> = gguf_gen::gpt2_vocab().words.iter().map(|w| w.0).collect();
    vec![
        ("gguf/llama-f32-untied.gguf", llama.clone(), "llama", 373),
        ("gguf/llama-q8_0-tied.gguf", llama, "llama", 373),
        ("gguf/gpt2-f16-tied.gguf", gpt2.clone(), "gpt2", 341),
        ("gguf/gpt2-q4_k-untied.gguf", gpt2, "gpt2", 341),
    ]
}

#[test]
fn info_summarises_the_metadata_vocabulary() {
    for (rel, _, model, size) in fixtures() {
        let v = json(&["info", &fixture(rel)]);
        assert_eq!(v["tokenizer"]["model"], model, "{rel}");
        assert_eq!(v["tokenizer"]["size"], size, "{rel}");
    }
}

#[test]
fn tokens_and_text_resolve_to_the_planted_rows() {
    // The readable form " Paris" names `▁Paris` and `ĠParis` alike.
    // WORDS order: king 0, queen 1, man 2, woman 3, ..., Paris 6, France 7, Hello 17.
    for (rel, words, ..) in fixtures() {
        let v = json(&["lookup", &fixture(rel), "--token", " Paris"]);
        assert_eq!(ids(&v["rows"]), [words[6] as u64], "{rel}");
        assert_eq!(v["rows"][0]["token"], " Paris", "{rel}");
        // SentencePiece adds the leading `▁`; byte-level BPE needs the space.
        let text = if rel.contains("llama") {
            "Hello king"
        } else {
            " Hello king"
        };
        let t = json(&["lookup", &fixture(rel), "--text", text]);
        assert_eq!(
            ids(&t["rows"]),
            [words[17] as u64, words[0] as u64],
            "{rel}"
        );
    }
    // The llama vocabulary adds BOS (`<s>`, id 1) when asked.
    let bos = json(&[
        "lookup",
        &fixture("gguf/llama-q8_0-tied.gguf"),
        "--text",
        "Hello king",
        "--add-special-tokens",
    ]);
    assert_eq!(ids(&bos["rows"])[0], 1);
    assert_eq!(bos["rows"][0]["token"], "<s>");
    // Byte tokens read as their character.
    let byte = json(&[
        "lookup",
        &fixture("gguf/llama-q8_0-tied.gguf"),
        "--id",
        "13",
    ]);
    assert_eq!(byte["rows"][0]["token"], "\\n");
}

#[test]
fn word_neighbours_and_analogies_on_quantized_matrices() {
    for (rel, words, ..) in fixtures() {
        let v = json(&[
            "neighbors",
            &fixture(rel),
            "Paris",
            "king - man + woman",
            "-k",
            "2",
        ]);
        let q = v["queries"].as_array().unwrap();
        assert_eq!(q[0]["results"][0]["id"], words[7], "{rel}: France");
        assert_eq!(q[0]["results"][0]["token"], " France", "{rel}");
        assert_eq!(q[1]["results"][0]["id"], words[1], "{rel}: queen");
        assert_eq!(q[1]["results"][0]["token"], " queen", "{rel}");
    }
}

#[test]
fn check_reads_unused_token_types_as_placeholders() {
    let v = json(&["check", &fixture("gguf/llama-q8_0-tied.gguf")]);
    assert_eq!(v["tokenizer_size"], 373);
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "placeholder-rows")
        .expect("placeholder-rows finding");
    let listed: Vec<u64> = f["evidence"]["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_u64().unwrap())
        .collect();
    assert_eq!(listed, [371, 372]);
    assert_eq!(f["evidence"]["ids"][0]["token"], "<unused0>");
}
