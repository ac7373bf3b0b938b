//! `check`: every defect fixture reports exactly its finding, with the
//! right exit codes; the clean fixtures report no error or warning.

use std::collections::{BTreeSet, HashMap};

use safetensors::tensor::{Dtype, TensorView};
use serde_json::Value;

use crate::common::{embscope, fails, fixture, fixture_copy, json, text, unreadable_findings};

/// Runs `check --json` with extra args; returns the exit code and the report.
fn check(model: &str, extra: &[&str]) -> (i32, Value) {
    let out = embscope()
        .args(["--json", "check", model])
        .args(extra)
        .output()
        .expect("runs");
    let code = out.status.code().expect("exit code");
    assert!(
        code == 0 || code == 1,
        "{model}: exit {code}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = serde_json::from_slice(&out.stdout).expect("stdout is one JSON document");
    (code, v)
}

fn codes(v: &Value, pred: impl Fn(&str) -> bool) -> BTreeSet<String> {
    v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| pred(f["severity"].as_str().unwrap_or_default()))
        .map(|f| f["code"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The first finding with `code`.
fn finding<'a>(v: &'a Value, code: &str) -> &'a Value {
    v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["code"] == code)
        .unwrap_or_else(|| panic!("no {code} finding in {v}"))
}

/// Number of findings of severity `sev`.
fn has_n(v: &Value, sev: &str) -> u64 {
    v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["severity"] == sev)
        .count() as u64
}

/// (fixture, warn/error codes exactly, info codes that must be present)
const DEFECTS: &[(&str, &[&str], &[&str])] = &[
    (
        "tokenizer-larger-than-matrix",
        &["tokenizer-larger-than-matrix"],
        &[],
    ),
    ("vocab-padding", &[], &["vocab-padding"]),
    ("unreachable-rows", &["unreachable-rows"], &[]),
    ("config-vocab-mismatch", &["config-vocab-mismatch"], &[]),
    (
        "head-rows-mismatch",
        &["head-rows-mismatch"],
        &["vocab-padding"],
    ),
    ("hidden-size-mismatch", &["hidden-size-mismatch"], &[]),
    ("special-id-out-of-range", &["special-id-out-of-range"], &[]),
    ("special-id-negative", &["special-id-negative"], &[]),
    ("special-token-missing", &["special-token-missing"], &[]),
    ("special-tokens-disagree", &["special-tokens-disagree"], &[]),
    ("tied-head-differs", &["tied-head-differs"], &[]),
    ("tied-head-duplicate", &[], &["tied-head-duplicate"]),
    ("untied-head-missing", &["untied-head-missing"], &[]),
    ("untied-head-identical", &[], &["untied-head-identical"]),
    ("non-finite-values", &["non-finite-values"], &[]),
    ("zero-rows", &["zero-rows"], &[]),
    ("pad-row-zero", &[], &["pad-row-zero"]),
    ("duplicate-rows", &[], &["duplicate-rows"]),
    ("norm-outliers", &[], &["norm-outliers"]),
    ("values-not-checked", &["values-not-checked"], &[]),
    (
        "embed-head-dtype-differ",
        &["embed-head-dtype-differ"],
        &["config-dtype-differs"],
    ),
    ("config-dtype-differs", &[], &["config-dtype-differs"]),
    ("added-token-missing", &["added-token-missing"], &[]),
    ("added-token-id-differs", &["added-token-id-differs"], &[]),
    ("duplicate-token-ids", &["duplicate-token-ids"], &[]),
    ("duplicate-token-strings", &["duplicate-token-strings"], &[]),
    ("no-embedding", &["no-embedding"], &[]),
];

#[test]
fn every_defect_fixture_reports_exactly_its_codes_and_exit_codes() {
    let dirs: BTreeSet<String> = std::fs::read_dir(crate::common::fixtures().join("defects"))
        .expect("defects/")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    let listed: BTreeSet<String> = DEFECTS.iter().map(|d| d.0.to_string()).collect();
    assert_eq!(dirs, listed, "every defect fixture has a row here");
    for &(name, loud, info) in DEFECTS {
        let model = fixture(&format!("defects/{name}"));
        let (code, v) = check(&model, &[]);
        let got = codes(&v, |s| s != "info");
        let want: BTreeSet<String> = loud.iter().map(|s| s.to_string()).collect();
        assert_eq!(got, want, "{name}");
        let infos = codes(&v, |s| s == "info");
        for i in info {
            assert!(infos.contains(*i), "{name}: no {i} in {infos:?}");
        }
        let errors = has_n(&v, "error");
        let warns = has_n(&v, "warn");
        assert_eq!(v["counts"]["error"], errors, "{name}");
        assert_eq!(v["counts"]["warn"], warns, "{name}");
        assert_eq!(code, i32::from(errors > 0), "{name}: default exit");
        let (code, _) = check(&model, &["--fail-on", "warn"]);
        assert_eq!(
            code,
            i32::from(errors + warns > 0),
            "{name}: --fail-on warn"
        );
    }
}

#[test]
fn clean_fixtures_report_no_error_or_warning() {
    for name in ["llama-sharded", "gpt2-tied", "qwen-f16-tied", "bert"] {
        let (code, v) = check(&fixture(name), &["--fail-on", "warn"]);
        assert_eq!(codes(&v, |s| s != "info"), BTreeSet::new(), "{name}");
        assert_eq!(code, 0, "{name}");
        assert!(
            codes(&v, |s| s == "info").contains("norm-summary"),
            "{name}"
        );
        assert_eq!(v["counts"]["error"], 0);
        assert_eq!(v["counts"]["warn"], 0);
    }
}

#[test]
fn evidence_names_ids_tokens_and_tensors() {
    let (_, v) = check(&fixture("defects/non-finite-values"), &[]);
    let f: Vec<&Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "non-finite-values")
        .collect();
    assert_eq!(f.len(), 2);
    assert_eq!(f[0]["evidence"]["tensor"], "model.embed_tokens.weight");
    assert_eq!(f[0]["evidence"]["ids"][0]["id"], 7);
    assert_eq!(f[0]["evidence"]["ids"][0]["token"], "and");
    assert_eq!(f[1]["evidence"]["tensor"], "lm_head.weight");
    assert_eq!(f[1]["evidence"]["inf_rows"], 1);

    let (_, v) = check(&fixture("defects/vocab-padding"), &[]);
    let f = finding(&v, "vocab-padding");
    assert_eq!(f["evidence"]["padding_multiple"], 32);
    assert_eq!(f["evidence"]["unreachable"], 2);
    assert_eq!(
        f["evidence"]["content"]["model.embed_tokens.weight"]["kind"],
        "zero"
    );

    let (_, v) = check(&fixture("defects/unreachable-rows"), &[]);
    let f = finding(&v, "unreachable-rows");
    assert_eq!(
        f["evidence"]["content"]["model.embed_tokens.weight"]["kind"],
        "trained-looking"
    );
    // The padding rows are not reported again as zero rows.
    let (_, v) = check(&fixture("defects/vocab-padding"), &["--fail-on", "warn"]);
    assert!(!codes(&v, |_| true).contains("zero-rows"));

    // additional_special_tokens: "[MASK]" is in the vocabulary, "<tool>" not.
    let (_, v) = check(&fixture("defects/special-token-missing"), &[]);
    let f = finding(&v, "special-token-missing");
    let missing: Vec<(&str, &str)> = f["evidence"]["declarations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["role"].as_str().unwrap(), d["token"].as_str().unwrap()))
        .collect();
    assert_eq!(missing, [("bos", "<s>"), ("additional", "<tool>")]);
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("tokenizer_config.json additional_special_tokens \"<tool>\""),
        "{f}"
    );
}

#[test]
fn human_output_has_one_line_per_finding_and_a_summary() {
    let text = text(&["check", &fixture("defects/zero-rows")], 0);
    assert!(text.contains("warn  zero-rows  `model.embed_tokens.weight` has 1 all-zero row(s) that tokens reach: 8 \"to\""), "{text}");
    assert!(
        text.trim_end().ends_with("0 errors, 1 warning, 3 notes"),
        "{text}"
    );
}

#[test]
fn header_findings_are_printed_before_value_findings() {
    // config-dtype-differs is known from the headers, norm-summary only
    // after the value pass; vocab-padding waits for the pass, which says
    // what the padding rows hold.
    let t = text(&["check", &fixture("defects/config-dtype-differs")], 0);
    let lines: Vec<&str> = t.lines().filter(|l| !l.starts_with(' ')).collect();
    assert!(lines[0].starts_with("info  config-dtype-differs"), "{t}");
    assert!(lines[1].starts_with("info  norm-summary"), "{t}");
    assert!(
        t.contains(
            "      tensors: model.embed_tokens.weight (dtype BF16), lm_head.weight (dtype BF16)"
        ),
        "{t}"
    );
    let t = text(&["check", &fixture("defects/vocab-padding")], 0);
    assert!(t.starts_with("info  vocab-padding"), "{t}");
    assert!(t.contains("in `lm_head.weight` they are all zero"), "{t}");
}

#[test]
fn unreadable_input_is_exit_2() {
    fails(
        &["check", &fixture("broken/truncated.safetensors")],
        "truncated",
    );
    fails(&["check", &fixture("no-such-model")], "no-such-model");
}

#[test]
fn a_matrix_without_columns_is_reported_not_read() {
    // Regression: a [400, 0] embedding (zero bytes, so the header is
    // consistent) with a smaller tokenizer made the value findings index an
    // empty norm list and panic.
    let tmp = tempfile::tempdir().unwrap();
    let view = TensorView::new(Dtype::BF16, vec![400, 0], &[]).unwrap();
    safetensors::serialize_to_file(
        [("model.embed_tokens.weight", view)],
        None::<HashMap<String, String>>,
        &tmp.path().join("model.safetensors"),
    )
    .unwrap();
    std::fs::copy(
        fixture("llama-sharded/tokenizer.json"),
        tmp.path().join("tokenizer.json"),
    )
    .unwrap();
    let model = tmp.path().display().to_string();
    let (code, v) = check(&model, &[]);
    assert_eq!(code, 0);
    assert!(
        codes(&v, |s| s == "warn").contains("values-not-checked"),
        "{v}"
    );
    fails(&["neighbors", &model, "#1"], "shape [400, 0]");
}

#[test]
fn without_tokenizer_json_the_config_files_still_declare_specials() {
    // The pad id of config.json marks the zero row as padding, not a defect.
    let tmp = fixture_copy("defects/pad-row-zero");
    std::fs::remove_file(tmp.path().join("tokenizer.json")).unwrap();
    let model = tmp.path().display().to_string();
    let (code, v) = check(&model, &["--fail-on", "warn"]);
    assert_eq!(code, 0, "{v}");
    assert!(codes(&v, |s| s == "info").contains("pad-row-zero"), "{v}");
    // A malformed special-token file is a finding, as with a tokenizer.
    std::fs::write(
        tmp.path().join("tokenizer_config.json"),
        "{\"bos_token\": 3",
    )
    .unwrap();
    unreadable_findings(&model, "tokenizer_config.json");
}

#[test]
fn without_a_config_the_files_decide_the_tie() {
    // Regression: with no config.json (a bare file, or Mistral's own
    // layout of `consolidated.safetensors` and `params.json`), a stored head
    // counted as tied by a config, and `check` reported `tied-head-differs`
    // ("config ties the head") while noting that it skipped the config's
    // checks. A stored head is now untied; none, tied (as for GGUF).
    let tmp = fixture_copy("untrained");
    std::fs::remove_file(tmp.path().join("config.json")).unwrap();
    let model = tmp.path().display().to_string();
    let (code, v) = check(&model, &[]);
    assert_eq!((code, &v["counts"]["error"]), (0, &Value::from(0)), "{v}");
    assert!(codes(&v, |s| s == "info").contains("no-config"), "{v}");
    let info = json(&["info", &model]);
    assert_eq!(info["tie"]["status"], "untied", "{info}");
    assert_eq!(info["tie"]["resolved"], false);
    assert!(info["tie"]["config"].is_null());
    assert!(
        text(&["info", &model], 0).contains(
            "untied (separate head stored); no config.json, so no tie flag (tied when no head is stored)"
        )
    );
    // Both matrices are read as such: the head is the stored one.
    let u = json(&["undertrained", &model, "--top", "2"]);
    assert_eq!(
        (&u["head"], u["passes"].as_u64()),
        (&Value::from("lm_head.weight"), Some(2))
    );
    let bare = json(&["info", &fixture("dtypes/bf16.safetensors")]);
    assert_eq!(
        (&bare["tie"]["status"], &bare["tie"]["resolved"]),
        (&Value::from("tied"), &Value::from(true))
    );
}
