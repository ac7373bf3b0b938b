//! `neighbors`: planted ground truth, exactness against a brute-force
//! reference, every query form, filters, batches, zero/NaN rows, bad input.

use std::collections::HashMap;

use safetensors::tensor::{Dtype, TensorView};
use serde_json::Value;

use crate::common::{
    cosine_top_k, embscope, fails, fixture, fixture_copy, goes_on, json, write_f32_embedding,
};

fn ids(answer: &Value) -> Vec<u64> {
    answer["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_u64().unwrap())
        .collect()
}

fn scores(answer: &Value) -> Vec<f64> {
    answer["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["score"].as_f64().unwrap())
        .collect()
}

#[test]
fn planted_neighbours_in_every_dtype() {
    for model in ["llama-sharded", "gpt2-tied", "qwen-f16-tied"] {
        let v = json(&[
            "neighbors",
            &fixture(model),
            "Paris",
            "king - man + woman",
            "cat",
            "-k",
            "3",
        ]);
        let q = v["queries"].as_array().unwrap();
        let paris = ids(&q[0]);
        assert_eq!(paris[0], 291, "{model}: France first");
        let mut capitals = paris[1..].to_vec();
        capitals.sort();
        assert_eq!(
            capitals,
            [297, 308],
            "{model}: then Berlin and Rome (equal planted scores)"
        );
        assert_eq!(ids(&q[1])[..2], [264, 280], "{model}: queen, princess");
        assert_eq!(ids(&q[2])[0], 319, "{model}: dog");
        assert_eq!(q[0]["results"][0]["token"], " France");
        assert_eq!(q[1]["ids"], serde_json::json!([259, 267, 272]));
    }
    let bert = json(&["neighbors", &fixture("bert"), "paris", "-k", "1"]);
    assert_eq!(bert["queries"][0]["results"][0]["token"], "france");
}

/// Cosine top-k computed in f64 from the rows `lookup` returns.
fn reference(model: &str, query: usize, k: usize) -> Vec<(u64, f64)> {
    let all: Vec<String> = (0..341).map(|i| i.to_string()).collect();
    let mut args = vec!["lookup", model, "--id"];
    args.extend(all.iter().map(String::as_str));
    let rows: Vec<Vec<f64>> = json(&args)["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect()
        })
        .collect();
    cosine_top_k(&rows, query, k)
}

#[test]
fn exact_against_a_brute_force_reference() {
    for (model, query) in [
        ("llama-sharded", 7),
        ("llama-sharded", 285),
        ("gpt2-tied", 100),
        ("qwen-f16-tied", 3),
    ] {
        let want = reference(&fixture(model), query, 10);
        let v = json(&[
            "neighbors",
            &fixture(model),
            &format!("#{query}"),
            "-k",
            "10",
        ]);
        let got = &v["queries"][0];
        assert_eq!(
            ids(got),
            want.iter().map(|w| w.0).collect::<Vec<_>>(),
            "{model} #{query}"
        );
        for (g, w) in scores(got).iter().zip(&want) {
            assert!((g - w.1).abs() < 1e-5, "{model} #{query}: {g} vs {}", w.1);
        }
    }
}

#[test]
fn include_query_and_dot_metric() {
    let v = json(&[
        "neighbors",
        &fixture("llama-sharded"),
        "#259",
        "--include-query",
        "-k",
        "2",
    ]);
    let a = &v["queries"][0];
    assert_eq!(ids(a)[0], 259);
    assert!((scores(a)[0] - 1.0).abs() < 1e-5);
    let dot = json(&[
        "neighbors",
        &fixture("dtypes/f32.safetensors"),
        "#0",
        "--metric",
        "dot",
        "-k",
        "3",
    ]);
    // rows: [0 1 -2 .5] [1.5 -.25 3 4] [-1 .75 2 -3] [6 -.5 .25 1.25]; q = row 0
    assert_eq!(ids(&dot["queries"][0]), [3, 1, 2]);
    assert_eq!(scores(&dot["queries"][0]), [-0.375, -4.25, -4.75]);
}

#[test]
fn text_queries_average_their_tokens() {
    let v = json(&[
        "neighbors",
        &fixture("bert"),
        "--text",
        "king queen",
        "-k",
        "2",
    ]);
    let a = &v["queries"][0];
    assert_eq!(a["ids"], serde_json::json!([5, 6]));
    assert_eq!(
        ids(a),
        [9, 10],
        "prince, princess: the query's own tokens are left out"
    );
}

#[test]
fn filters_cut_special_and_non_letter_rows() {
    let all = json(&["neighbors", &fixture("bert"), "the", "-k", "40"]);
    let all_ids = ids(&all["queries"][0]);
    assert!(
        all_ids.iter().any(|&i| i < 5),
        "specials are candidates by default"
    );
    let v = json(&[
        "neighbors",
        &fixture("bert"),
        "the",
        "-k",
        "40",
        "--filter",
        "no-special,letters",
    ]);
    let results = v["queries"][0]["results"].as_array().unwrap();
    // 28 candidate rows with letters and not special, less the query.
    assert_eq!(results.len(), 27);
    assert!(results.iter().all(|r| r["id"].as_u64().unwrap() >= 5));
    assert!(results.iter().all(|r| {
        r["token"]
            .as_str()
            .unwrap()
            .chars()
            .any(char::is_alphabetic)
    }));
    assert!(
        !results
            .iter()
            .any(|r| r["token"] == "," || r["token"] == ".")
    );
    let padded = json(&[
        "neighbors",
        &fixture("bert"),
        "the",
        "-k",
        "40",
        "--filter",
        "no-padding",
    ]);
    assert_eq!(
        ids(&padded["queries"][0]),
        all_ids,
        "no rows beyond the tokenizer here"
    );
    fails(
        &[
            "neighbors",
            &fixture("dtypes/f32.safetensors"),
            "#0",
            "--filter",
            "letters",
        ],
        "--filter needs a tokenizer",
    );
}

#[test]
fn head_matrix_untied_and_tied() {
    let embed = json(&["neighbors", &fixture("llama-sharded"), "#100", "-k", "5"]);
    let head = json(&[
        "neighbors",
        "--matrix",
        "head",
        &fixture("llama-sharded"),
        "#100",
        "-k",
        "5",
    ]);
    assert_eq!(head["matrix"], "lm_head.weight");
    assert_ne!(ids(&embed["queries"][0]), ids(&head["queries"][0]));
    let tied = json(&[
        "neighbors",
        "--matrix",
        "head",
        &fixture("gpt2-tied"),
        "#100",
        "-k",
        "5",
    ]);
    assert_eq!(tied["matrix"], "transformer.wte.weight");
    assert_eq!(
        ids(&tied["queries"][0]),
        ids(&json(&["neighbors", &fixture("gpt2-tied"), "#100", "-k", "5"])["queries"][0])
    );
}

#[test]
fn batch_answers_equal_single_answers() {
    let queries = ["Paris", "king - man + woman", "#42", "dog"];
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("queries.txt");
    std::fs::write(&file, format!("{}\n\n", queries.join("\n"))).unwrap();
    let batch = json(&[
        "neighbors",
        &fixture("llama-sharded"),
        "--batch",
        file.to_str().unwrap(),
        "-k",
        "5",
    ]);
    let positional = json(
        &[
            &["neighbors", &fixture("llama-sharded"), "-k", "5"][..],
            &queries[..],
        ]
        .concat(),
    );
    assert_eq!(batch["queries"], positional["queries"]);
    for (i, q) in queries.iter().enumerate() {
        let single = json(&["neighbors", &fixture("llama-sharded"), q, "-k", "5"]);
        assert_eq!(batch["queries"][i], single["queries"][0], "{q}");
    }
}

/// A 6 × 4 F32 matrix: row 2 all zeros, row 3 NaN, rows 4 and 5 equal.
fn special_rows(dir: &std::path::Path) -> String {
    let rows: [[f32; 4]; 6] = [
        [1.0, 0.0, 0.0, 0.0],
        [0.5, 0.5, 0.0, 0.0],
        [0.0; 4],
        [f32::NAN, 1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0, 0.0],
    ];
    let values: Vec<f32> = rows.iter().flatten().copied().collect();
    write_f32_embedding(&dir.join("m.safetensors"), 4, &values)
}

#[test]
fn zero_rows_score_zero_nan_rows_never_rank_and_ties_break_by_id() {
    let tmp = tempfile::tempdir().unwrap();
    let m = special_rows(tmp.path());
    let v = json(&["neighbors", &m, "#1", "-k", "10"]);
    let a = &v["queries"][0];
    assert_eq!(
        ids(a),
        [0, 4, 5, 2],
        "NaN row 3 is no candidate; 4 before 5 on a tie"
    );
    let s = scores(a);
    assert!((s[0] - 0.5f64.sqrt()).abs() < 1e-6);
    assert_eq!(s[1], s[2]);
    assert_eq!(s[3], 0.0, "cosine with a zero row is 0, not NaN");
    let zero = json(&["neighbors", &m, "#2", "-k", "3"]);
    assert_eq!(
        scores(&zero["queries"][0]),
        [0.0, 0.0, 0.0],
        "a zero query scores 0 everywhere"
    );
}

#[test]
fn bad_queries() {
    let llama = fixture("llama-sharded");
    fails(
        &["neighbors", &llama, "Parisian"],
        "`Parisian` is not one vocabulary entry but 8 tokens",
    );
    fails(
        &["neighbors", &fixture("bert"), "qqq"],
        "token `qqq` is not in the vocabulary",
    );
    fails(&["neighbors", &llama, ""], "query `` is empty");
    fails(&["neighbors", &llama, "king -"], "ends with an operator");
    fails(
        &["neighbors", &llama, "king + - man"],
        "follows another operator",
    );
    fails(
        &["neighbors", &llama, "king", "-k", "0"],
        "for '--top <N>': must be at least 1",
    );
    fails(&["neighbors", &llama], "no query");
    fails(&["neighbors", &llama, "#341"], "id 341 is out of range");
    let err = fails(
        &["neighbors", &fixture("dtypes/f32.safetensors"), "king"],
        "needs a tokenizer",
    );
    assert!(err.contains("query rows as #ID"), "{err}");
    let out = embscope()
        .args(["neighbors", &llama, "king", "-k", "1000", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["k"], 341);
    assert_eq!(v["queries"][0]["results"].as_array().unwrap().len(), 340);
    assert!(String::from_utf8_lossy(&out.stderr).contains(
        "-k 1000 is more than the 341 candidate rows; showing 340: all but the query's own rows"
    ));
}

#[test]
fn a_k_past_the_candidates_says_what_is_shown() {
    let tmp = tempfile::tempdir().unwrap();
    let m = special_rows(tmp.path());
    let note = |args: &[&str]| {
        let out = embscope().args(args).output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stderr).unwrap()
    };
    // Six rows: the query's own row 1 and the NaN row 3 are not shown.
    let err = note(&["neighbors", &m, "#1", "-k", "99999999"]);
    assert!(
        err.contains("-k 99999999 is more than the 6 candidate rows; showing 4: all but the query's own rows and those that are not finite"),
        "{err}"
    );
    let err = note(&["neighbors", &m, "#1", "-k", "50", "--include-query"]);
    assert!(
        err.contains("showing 5: all but the rows that are not finite, which have no score"),
        "{err}"
    );
    let err = note(&["neighbors", &m, "#1", "#0 + #4", "-k", "50"]);
    assert!(err.contains("showing 3 to 4 per query"), "{err}");
}

#[test]
fn dot_scores_show_the_decimals_that_tell_ranks_apart() {
    // The query row 0 is [1, 0]: each dot product is a row's first value.
    let tmp = tempfile::tempdir().unwrap();
    let values = [1.0, 0.0, 0.03844, 1.0, 0.03843, 1.0, 0.0384, 1.0, 0.5, 1.0];
    let m = write_f32_embedding(&tmp.path().join("m.safetensors"), 2, &values);
    let out = crate::common::text(&["neighbors", &m, "#0", "--metric", "dot", "-k", "4"], 0);
    let shown: Vec<&str> = (out.lines().skip(2))
        .map(|l| l.split_whitespace().last().unwrap())
        .collect();
    assert_eq!(shown, ["0.50000", "0.03844", "0.03843", "0.03840"], "{out}");
}

#[test]
fn rows_beyond_32_bit_ids_are_refused_not_a_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("huge.safetensors");
    let view = TensorView::new(Dtype::F32, vec![5_000_000_000, 0], &[]).unwrap();
    safetensors::serialize_to_file(
        [("embed_tokens.weight", view)],
        None::<HashMap<String, String>>,
        &path,
    )
    .unwrap();
    let p = path.display().to_string();
    for args in [vec!["neighbors", &p, "#0"], vec!["lookup", &p, "--id", "0"]] {
        fails(&args, "has 5000000000 rows; token ids are 32-bit");
    }
}

#[test]
fn id_queries_name_tokens_and_report_a_broken_tokenizer() {
    // `#ID` queries scan while the tokenizer loads; the results are named
    // all the same.
    let by_word = json(&["neighbors", &fixture("llama-sharded"), "Paris", "-k", "3"]);
    let id = by_word["queries"][0]["ids"][0].as_u64().unwrap();
    let by_id = json(&[
        "neighbors",
        &fixture("llama-sharded"),
        &format!("#{id}"),
        "-k",
        "3",
    ]);
    assert_eq!(
        by_id["queries"][0]["results"],
        by_word["queries"][0]["results"]
    );
    assert_eq!(by_id["queries"][0]["results"][0]["token"], " France");
    assert_eq!(by_id["queries"][0]["tokens"], serde_json::json!([" Paris"]));
    assert_eq!(
        by_word["queries"][0]["tokens"],
        by_id["queries"][0]["tokens"]
    );
    // A malformed tokenizer.json is an error naming it where a word needs
    // it; rows by id go on without token strings, and say why.
    let tmp = fixture_copy("llama-sharded");
    std::fs::write(tmp.path().join("tokenizer.json"), "{\"model\": ").unwrap();
    let model = tmp.path().display().to_string();
    let out = goes_on(&["--json", "neighbors", &model, "#1"], 0, "tokenizer.json");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["queries"][0]["results"][0]["token"].is_null(), "{v}");
    fails(&["neighbors", &model, "Paris"], "tokenizer.json");
}
