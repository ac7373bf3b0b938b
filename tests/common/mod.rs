//! Helpers shared by the CLI tests.

pub mod fuzz;

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

/// The repository's `fixtures/` directory.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// A fixture path as a string.
pub fn fixture(rel: &str) -> String {
    fixtures().join(rel).display().to_string()
}

/// `embscope` with an environment that cannot see a real Hugging Face cache.
pub fn embscope() -> Command {
    let mut c = Command::cargo_bin("embscope").expect("binary built");
    c.env_remove("HF_HUB_CACHE")
        .env_remove("HF_HOME")
        .env_remove("OLLAMA_MODELS")
        .env("HOME", "/nonexistent")
        .env("NO_COLOR", "1");
    c
}

/// Runs with `--json`, expects exit 0, parses stdout.
pub fn json(args: &[&str]) -> Value {
    let out = embscope().arg("--json").args(args).output().expect("runs");
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON document")
}

/// stdout of `embscope ARGS` run from the repository root (so relative
/// fixture paths work and show as such), after checking the exit code.
pub fn text(args: &[&str], code: i32) -> String {
    let out = embscope()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(code),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("stdout is UTF-8")
}

/// Runs, expects exit code 2 and one line on stderr naming `needle`; returns stderr.
pub fn fails(args: &[&str], needle: &str) -> String {
    let out = embscope().args(args).output().expect("runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?} printed to stdout");
    assert!(err.starts_with("embscope: "), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    assert!(err.contains(needle), "{err:?} lacks {needle:?}");
    err
}

/// Runs, expects exit code `code` (0, or 1 for `check`) and, on stderr, a
/// note that a file it could do without is unreadable, naming `needle`;
/// returns stdout.
pub fn goes_on(args: &[&str], code: i32, needle: &str) -> String {
    let out = embscope().args(args).output().expect("runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    let note = err
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{args:?}: no note naming {needle:?} in {err:?}"));
    assert!(
        note.starts_with("note: `")
            && note.contains("` is unreadable (")
            && note.ends_with("); ignored"),
        "{note}"
    );
    String::from_utf8(out.stdout).expect("stdout is UTF-8")
}

/// The `unreadable-file` findings of `check MODEL` (which exits 1 on
/// them, at the default `--fail-on`), asserting one names `needle`.
pub fn unreadable_findings(model: &str, needle: &str) -> Vec<Value> {
    let out = embscope()
        .args(["--json", "check", model])
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "check {model}: {err}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("stdout is one JSON document");
    let found: Vec<Value> = (v["findings"].as_array().expect("findings").iter())
        .filter(|f| f["code"] == "unreadable-file")
        .cloned()
        .collect();
    assert!(
        found.iter().any(|f| f["severity"] == "error"
            && f["message"].as_str().is_some_and(|m| m.contains(needle))),
        "check {model}: no unreadable-file finding naming {needle:?} in {v}"
    );
    found
}

/// A copy of a fixture directory in a temporary directory, to break a file of.
pub fn fixture_copy(rel: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_files(&fixtures().join(rel), tmp.path());
    tmp
}

/// Copies the files of directory `from` into directory `to`.
pub fn copy_files(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, to.join(path.file_name().unwrap())).unwrap();
    }
}

/// Writes `path` as a safetensors file holding one F32 tensor
/// `embed_tokens.weight` of `cols` columns with `values` (row-major), and
/// returns the path as text.
pub fn write_f32_embedding(path: &Path, cols: usize, values: &[f32]) -> String {
    use safetensors::tensor::{Dtype, TensorView};
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let shape = vec![values.len() / cols, cols];
    let view = TensorView::new(Dtype::F32, shape, &data).unwrap();
    safetensors::serialize_to_file(
        [("embed_tokens.weight", view)],
        None::<std::collections::HashMap<String, String>>,
        path,
    )
    .unwrap();
    path.display().to_string()
}

/// The cosine of `a` and `b`, in f64.
pub fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let norm = |r: &[f64]| r.iter().map(|x| x * x).sum::<f64>().sqrt();
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    dot / (norm(a) * norm(b))
}

/// Cosine top-k of row `query` among `rows` (itself left out), computed in
/// f64, ties to the lower id: the brute-force reference for `neighbors`.
pub fn cosine_top_k(rows: &[Vec<f64>], query: usize, k: usize) -> Vec<(u64, f64)> {
    let q = &rows[query];
    let mut scored: Vec<(u64, f64)> = rows
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != query)
        .map(|(i, r)| (i as u64, cosine(r, q)))
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.truncate(k);
    scored
}

/// The `id` of every object in a JSON list (rows, candidates, evidence ids).
pub fn ids(list: &Value) -> Vec<u64> {
    list.as_array()
        .expect("a list")
        .iter()
        .map(|c| c["id"].as_u64().expect("id"))
        .collect()
}
