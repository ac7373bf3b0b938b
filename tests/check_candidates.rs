//! `check`'s `undertrained-candidates` finding, whose indicators the value
//! pass makes, counts what `undertrained --matrix embed --no-reachable`
//! counts on the planted rows of `fixtures/untrained`, and names that
//! command: with a tokenizer (a reference set, the distance to its mean)
//! and without (norms only), untied and tied.

use std::path::Path;

use serde_json::Value;

use crate::common::{embscope, fixture, ids};

/// The planted untrained rows of `fixtures/untrained`.
const PLANTED: [u64; 5] = [180, 181, 182, 183, 338];

/// The `undertrained-candidates` evidence of `check MODEL` (None without
/// the finding).
fn finding(model: &str) -> Option<Value> {
    let out = embscope()
        .args(["--json", "check", model])
        .output()
        .expect("runs");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "check {model}: stdout is not one JSON document ({e}); stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["code"] == "undertrained-candidates")
        .map(|f| f["evidence"].clone())
}

/// Asserts that check's finding on `model` says what `undertrained` says,
/// and returns the finding's evidence.
fn same_as_undertrained(model: &str) -> Value {
    let out = embscope()
        .args(["--json", "undertrained", model])
        .args(["--matrix", "embed", "--no-reachable", "--top", "1000"])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let u: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let e = finding(model).unwrap_or_else(|| panic!("no finding on {model}"));
    assert_eq!(e["rows"], u["strong"], "{e}");
    assert_eq!(e["outside_reference"], u["strong_outside_reference"], "{e}");
    assert_eq!(e["total"], u["strong_outside_reference"], "{e}");
    assert_eq!(e["reference_rows"], u["reference"]["rows"], "{e}");
    assert_eq!(e["indicators"], u["indicators"], "{e}");
    assert_eq!(e["threshold"], u["threshold"], "{e}");
    // The finding names the command that counts as it does: with a head,
    // `undertrained` weighs it too unless told `--matrix embed`.
    assert_eq!(
        e["command"],
        format!("embscope undertrained {model} --matrix embed"),
        "{e}"
    );
    // The listed ids: the strong rows outside the reference set, best first.
    let want: Vec<u64> = u["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .filter(|c| c["strong"] == true && c["reference"] == false)
        .map(|c| c["id"].as_u64().expect("id"))
        .take(20)
        .collect();
    assert_eq!(ids(&e["ids"]), want, "{e}");
    e
}

/// A copy of `fixtures/untrained` in `dir`: without its tokenizer, or
/// tied (the embedding alone, `tie_word_embeddings` true).
fn variant(dir: &Path, tied: bool, tokenizer: bool) -> String {
    let src = Path::new(&fixture("untrained")).to_path_buf();
    if tokenizer {
        std::fs::copy(src.join("tokenizer.json"), dir.join("tokenizer.json")).unwrap();
    }
    let mut config: Value =
        serde_json::from_slice(&std::fs::read(src.join("config.json")).unwrap()).unwrap();
    config["tie_word_embeddings"] = Value::Bool(tied);
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    let bytes = std::fs::read(src.join("model.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let kept: Vec<(String, safetensors::tensor::TensorView)> = st
        .tensors()
        .into_iter()
        .filter(|(name, _)| !tied || name == "model.embed_tokens.weight")
        .collect();
    safetensors::serialize_to_file(kept, None, &dir.join("model.safetensors")).unwrap();
    dir.display().to_string()
}

#[test]
fn with_a_tokenizer_the_finding_counts_what_undertrained_counts() {
    let e = same_as_undertrained(&fixture("untrained"));
    assert_eq!(
        (e["rows"].clone(), e["reference_rows"].clone()),
        (11.into(), 6.into())
    );
    assert_eq!(e["indicators"], serde_json::json!(["embed_distance"]));
    let mut listed = ids(&e["ids"]);
    listed.sort_unstable();
    assert_eq!(listed, PLANTED);
}

#[test]
fn without_a_tokenizer_the_norms_alone_find_the_planted_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let e = same_as_undertrained(&variant(tmp.path(), false, false));
    assert_eq!(e["reference_rows"], 0);
    assert_eq!(e["indicators"], serde_json::json!(["embed_norm"]));
    // No reference set: every strong row is news, the planted ones among them.
    assert_eq!(e["outside_reference"], e["rows"]);
    let listed = ids(&e["ids"]);
    assert!(PLANTED.iter().all(|id| listed.contains(id)), "{e}");
}

#[test]
fn tied_embeddings_get_the_same_finding() {
    for tokenizer in [true, false] {
        let tmp = tempfile::tempdir().unwrap();
        let model = variant(tmp.path(), true, tokenizer);
        let e = same_as_undertrained(&model);
        let mut listed = ids(&e["ids"]);
        listed.sort_unstable();
        if tokenizer {
            // The embedding is the only matrix read: the same rows as untied.
            assert_eq!(listed, PLANTED, "{e}");
        } else {
            assert!(PLANTED.iter().all(|id| listed.contains(id)), "{e}");
        }
    }
}
