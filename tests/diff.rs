//! `diff`: a model against itself, against its fine-tunes in other
//! dtypes, files and tie (`fixtures/diff`, see `fixtures/gen/finetune.rs`),
//! and against models it cannot be compared with.

use serde_json::Value;

use crate::common::{embscope, fails, fixture, fixture_copy, ids, text};
use crate::regenerate::finetune::{ADDED, CHANGED, COPIED, SWAPPED, id_of, tuned_tokens};

const BASE: &str = "fixtures/diff/base";
const TUNED: &str = "fixtures/diff/tuned";

/// `embscope --json diff ARGS`: its exit code and the document.
fn diff(args: &[&str]) -> (i32, Value) {
    let out = embscope()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["--json", "diff"])
        .args(args)
        .output()
        .expect("runs");
    let doc = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().expect("an exit code"), doc)
}

/// The tuned ids of `tokens`.
fn tuned_ids(tokens: &[&str]) -> Vec<u64> {
    let tt = tuned_tokens();
    let mut ids: Vec<u64> = tokens.iter().map(|t| id_of(&tt, t) as u64).collect();
    ids.sort_unstable();
    ids
}

#[test]
fn a_model_against_itself_is_the_same() {
    for model in [
        BASE,
        "fixtures/diff/tuned-tied",
        "fixtures/diff/tuned-q8_0.gguf",
    ] {
        let (code, d) = diff(&[model, model]);
        assert_eq!((code, &d["same"]), (0, &Value::Bool(true)), "{model}");
        let rows = d["embedding"]["base"]["rows"].as_u64().unwrap();
        assert_eq!(d["embedding"]["identical"], rows, "{model}");
        assert_eq!(d["embedding"]["changed"], 0, "{model}");
        assert!(d["tokens"]["added"].as_array().unwrap().is_empty());
    }
    let (_, d) = diff(&["fixtures/diff/tuned-tied"; 2]);
    assert_eq!(d["head"]["same_as_embedding"], true);
    assert_eq!(d["tie"]["tuned"], "tied");
    let out = text(&["diff", BASE, BASE], 0);
    assert!(
        out.starts_with("diff  fixtures/diff/base → fixtures/diff/base: same\n"),
        "{out}"
    );
}

#[test]
fn a_fine_tune_reports_tokens_rows_and_how_added_rows_were_made() {
    let (code, d) = diff(&[BASE, TUNED]);
    assert_eq!(
        (code, &d["same"], &d["paired_by"]),
        (1, &Value::Bool(false), &"token".into())
    );
    let t = &d["tokens"];
    let added: Vec<&str> = ADDED.iter().map(|(t, _)| *t).collect();
    assert_eq!(ids(&t["added"]), tuned_ids(&added));
    assert!(
        t["added"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["special"] == true)
    );
    let renumbered: Vec<&str> = t["renumbered"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["token"].as_str().unwrap())
        .collect();
    assert_eq!(renumbered, [" dog", " cat"]);
    assert_eq!(t["removed"], serde_json::json!([]));
    let eos = &t["special_moved"][0];
    assert_eq!(
        (&eos["role"], &eos["tuned_tokens"][0]),
        (&"eos".into(), &"<|im_end|>".into())
    );
    for (name, changed) in [("embedding", CHANGED[0]), ("head", CHANGED[1])] {
        let m = &d[name];
        let rows = m["base"]["rows"].as_u64().unwrap();
        assert_eq!(m["compared"], rows, "{name}");
        assert_eq!(m["changed"], changed.len(), "{name}");
        assert_eq!(m["identical"], rows - changed.len() as u64, "{name}");
        assert_eq!(m["renumbered"], 2, "{name}");
        let mut top = ids(&m["top_changed"]);
        top.sort_unstable();
        assert_eq!(top, tuned_ids(changed), "{name}");
        // The distributions count the changed rows.
        for dist in ["cosine", "relative_change"] {
            let n: u64 = m[dist]["counts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_u64().unwrap())
                .sum();
            assert_eq!(n, changed.len() as u64, "{name} {dist}");
        }
        assert_eq!(ids(&m["added"]), tuned_ids(&added), "{name}");
        for (a, (token, init)) in m["added"].as_array().unwrap().iter().zip(ADDED) {
            assert_eq!(
                (a["token"].as_str(), a["init"].as_str()),
                (Some(token), Some(init)),
                "{name}"
            );
        }
        let copy = &m["added"][2];
        assert_eq!(
            copy["copy_of"],
            id_of(&crate::regenerate::finetune::base_tokens(), COPIED)
        );
        assert_eq!(copy["copy_of_token"], " Hello");
        assert!(m["added"][0].get("copy_of").is_none());
        assert_eq!(m["init"]["zeros"], 1);
        assert_eq!(m["removed"], serde_json::json!([]));
    }
    // The row turned around in the embedding moved most.
    let first = &d["embedding"]["top_changed"][0];
    assert_eq!(first["token"], " Paris");
    assert!((first["cosine"].as_f64().unwrap() + 1.0).abs() < 1e-6);
    assert!((first["relative_change"].as_f64().unwrap() - 2.0).abs() < 1e-5);
    let (_, one) = diff(&[BASE, TUNED, "--top", "1", "--matrix", "embed"]);
    assert_eq!(one["top_changed"], Value::Null);
    assert_eq!(one["embedding"]["top_changed"].as_array().unwrap().len(), 1);
    assert_eq!(one["head"], Value::Null);
}

#[test]
fn bf16_rows_saved_as_f32_are_identical() {
    let (_, d) = diff(&[BASE, TUNED, "--matrix", "embed"]);
    let m = &d["embedding"];
    assert_eq!(
        (&m["base"]["dtype"], &m["tuned"]["dtype"]),
        (&"BF16".into(), &"F32".into())
    );
    assert_eq!(m["tolerance"], Value::Null);
    assert_eq!(m["identical"], m["compared"].as_u64().unwrap() - 3);
}

#[test]
fn rows_pair_by_id_when_asked_or_when_a_tokenizer_is_missing() {
    // By id, the swapped tokens' rows are changed rows instead.
    let (code, d) = diff(&[BASE, TUNED, "--by-id", "--matrix", "embed"]);
    assert_eq!((code, &d["paired_by"]), (1, &"id".into()));
    assert_eq!(d["embedding"]["changed"], 3 + SWAPPED.len());
    assert_eq!(d["tokens"]["renumbered"].as_array().unwrap().len(), 2);
    let tuned = fixture_copy("diff/tuned");
    std::fs::remove_file(tuned.path().join("tokenizer.json")).unwrap();
    let path = tuned.path().display().to_string();
    let out = embscope()
        .args([
            "--json",
            "diff",
            &fixture("diff/base"),
            &path,
            "--matrix",
            "embed",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("note: ") && err.contains("no tokenizer.json"),
        "{err}"
    );
    assert!(err.contains("rows are paired by id"), "{err}");
    let d: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&d["paired_by"], &d["tokens"]["compared"]),
        (&"id".into(), &Value::Bool(false))
    );
    assert_eq!(d["embedding"]["changed"], 3 + SWAPPED.len());
}

#[test]
fn a_quantized_fine_tune_compares_within_its_rounding() {
    let (code, d) = diff(&[BASE, "fixtures/diff/tuned-q8_0.gguf"]);
    assert_eq!(code, 1);
    // The same tokenizer and specials, from the GGUF metadata.
    assert_eq!(d["tokens"]["kind"], Value::Null);
    assert_eq!(d["tokens"]["special_moved"].as_array().unwrap().len(), 1);
    for (name, changed) in [("embedding", CHANGED[0]), ("head", CHANGED[1])] {
        let m = &d[name];
        assert_eq!(m["tuned"]["dtype"], "Q8_0");
        assert!(m["tolerance"]["why"].as_str().unwrap().contains("Q8_0"));
        assert_eq!(m["changed"], changed.len(), "{name}");
        // A copy is rounded: found within the rounding by a search.
        let inits: Vec<&str> = m["added"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["init"].as_str().unwrap())
            .collect();
        assert_eq!(
            inits,
            ["zeros", "mean", "copy", "random", "trained"],
            "{name}"
        );
        assert_eq!(m["init_basis"]["copies_sought"], true);
        let (_, exact) = diff(&[BASE, TUNED]);
        let copy_of = &exact[name]["added"][2]["copy_of"];
        assert!(copy_of.is_u64(), "{name}: {exact}");
        assert_eq!(&m["added"][2]["copy_of"], copy_of, "{name}");
    }
    let out = text(&["diff", BASE, "fixtures/diff/tuned-q8_0.gguf"], 1);
    assert!(out.contains("TUNED is Q8_0"), "{out}");
}

#[test]
fn a_tie_that_changed_is_a_difference() {
    let (code, d) = diff(&[BASE, "fixtures/diff/tuned-tied"]);
    assert_eq!(code, 1);
    assert_eq!(
        (&d["tie"]["base"], &d["tie"]["tuned"]),
        (&"untied".into(), &"tied".into())
    );
    let head = &d["head"];
    assert_eq!(
        (&head["tuned"]["tied"], &head["tuned"]["tensor"]),
        (&Value::Bool(true), &"model.embed_tokens.weight".into())
    );
    assert_eq!(head["identical"], 0);
    let out = text(&["diff", BASE, "fixtures/diff/tuned-tied"], 1);
    assert!(out.contains("tie        untied → tied"), "{out}");
}

#[test]
fn the_tokenizer_alone_is_a_difference() {
    let tuned = fixture_copy("diff/base");
    let config = tuned.path().join("config.json");
    let mut c: Value = serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    c["eos_token_id"] = 3.into();
    std::fs::write(&config, c.to_string()).unwrap();
    let out = embscope()
        .args([
            "--json",
            "diff",
            &fixture("diff/base"),
            &tuned.path().display().to_string(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let d: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(d["embedding"]["changed"], 0);
    assert_eq!(d["tokens"]["special_moved"][0]["tuned"][0], 3);
}

#[test]
fn a_normaliser_that_changes_text_is_a_difference() {
    let tuned = fixture_copy("diff/base");
    let file = tuned.path().join("tokenizer.json");
    let mut t: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    t["normalizer"] = serde_json::json!({"type": "Sequence", "normalizers": [
        {"type": "NFD"}, {"type": "Lowercase"}, {"type": "StripAccents"}]});
    std::fs::write(&file, t.to_string()).unwrap();
    let tuned = tuned.path().display().to_string();
    let (code, d) = diff(&[BASE, &tuned]);
    assert_eq!(code, 1);
    assert_eq!(
        d["tokens"]["normalizer"],
        serde_json::json!(["none", "NFD, lowercase, strip accents"])
    );
    assert_eq!(d["embedding"]["changed"], 0);
    let out = text(&["diff", BASE, &tuned], 1);
    assert!(
        out.contains("normaliser none → NFD, lowercase, strip accents"),
        "{out}"
    );
}

#[test]
fn models_that_cannot_be_compared_are_one_line_exit_2() {
    let err = fails(
        &["diff", &fixture("diff/base"), &fixture("untrained")],
        "hidden size 32",
    );
    assert!(
        err.contains("hidden size 64") && err.contains("[345, 64]"),
        "{err}"
    );
    let err = fails(
        &["diff", &fixture("diff/base"), &fixture("bert")],
        "share only 3 of 35 tokens",
    );
    assert!(err.contains("--by-id"), "{err}");
    fails(
        &["diff", &fixture("diff/base"), "no/such-model"],
        "no/such-model",
    );
    // By id, they are compared; the head BERT lacks is left out, said so.
    let out = embscope()
        .args([
            "--json",
            "diff",
            &fixture("diff/base"),
            &fixture("bert"),
            "--by-id",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the heads are not compared"));
    let d: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&d["head"], &d["tie"]["tuned"]),
        (&Value::Null, &"no-head".into())
    );
    assert_eq!(
        d["embedding"]["removed"].as_array().unwrap().len(),
        341 - 35
    );
    fails(
        &[
            "diff",
            &fixture("diff/base"),
            &fixture("bert"),
            "--by-id",
            "--matrix",
            "head",
        ],
        "no output head",
    );
}

#[test]
fn text_is_a_summary_then_the_lists() {
    insta::assert_snapshot!(text(&["diff", BASE, TUNED, "--top", "3"], 1));
}
