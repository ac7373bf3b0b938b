//! MODEL as an Ollama model name, found in a store laid out as Ollama lays
//! it out (`OLLAMA_MODELS`: manifests by host, namespace, model and tag;
//! blobs by digest), and files known by their first bytes under any name.

use std::path::Path;

use crate::common::{embscope, fails, fixture, json};

/// The digest Ollama would name `bytes` by (any 64 hex digits do here).
const HEX: &str = "a865e10cc0c46410b8b6c33b97de7d2607d95d4f9d27ff203360c76479e6f7b6";

/// A store holding `library/tiny:q8` (the Q8_0 llama GGUF fixture) with a
/// template layer before the weights, as Ollama writes manifests.
fn store(root: &Path, digest: &str) {
    let manifests = root.join("manifests/registry.ollama.ai/library/tiny");
    std::fs::create_dir_all(&manifests).unwrap();
    std::fs::create_dir_all(root.join("blobs")).unwrap();
    std::fs::copy(
        fixture("gguf/llama-q8_0-tied.gguf"),
        root.join(format!("blobs/sha256-{HEX}")),
    )
    .unwrap();
    let manifest = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",
        "layers":[{{"mediaType":"application/vnd.ollama.image.template","digest":"sha256:{}","size":10}},
                  {{"mediaType":"application/vnd.ollama.image.model","digest":"{digest}","size":21638}}]}}"#,
        "0".repeat(64)
    );
    std::fs::write(manifests.join("q8"), manifest).unwrap();
}

fn run(root: &Path, args: &[&str]) -> std::process::Output {
    embscope()
        .env("OLLAMA_MODELS", root)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn an_ollama_name_opens_the_blob_its_manifest_names() {
    let tmp = tempfile::tempdir().unwrap();
    store(tmp.path(), &format!("sha256:{HEX}"));
    let out = run(tmp.path(), &["--json", "info", "tiny:q8"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["format"], "gguf");
    assert_eq!(v["embedding"]["name"], "token_embd.weight");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "note: tiny:q8 is Ollama's blob sha256-a865e10cc0c4…"
    );
    // Word queries, as on the file itself.
    let out = run(
        tmp.path(),
        &["--json", "neighbors", "tiny:q8", "king", "-k", "1"],
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["queries"][0]["results"][0]["token"], " prince");
    // The blob itself, named by its digest alone: known by its magic.
    let v = info(&tmp.path().join(format!("blobs/sha256-{HEX}")));
    assert_eq!(v["format"], "gguf");
}

/// `info --json` of the file at `path`, which must succeed.
fn info(path: &Path) -> serde_json::Value {
    json(&["info", &path.display().to_string()])
}

#[test]
fn an_ollama_name_not_in_the_store_says_where_it_looked() {
    let tmp = tempfile::tempdir().unwrap();
    store(tmp.path(), &format!("sha256:{HEX}"));
    let manifest = tmp
        .path()
        .join("manifests/registry.ollama.ai/library/tiny/q4");
    let out = run(tmp.path(), &["info", "tiny:q4"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        format!(
            "embscope: `tiny:q4` is not a path, and not in Ollama's store (no `{}`); embscope never downloads: fetch it with `ollama pull tiny:q4` first",
            manifest.display()
        )
    );
    // A name that could be a Hub id too: both places are named.
    let out = run(tmp.path(), &["info", "tiny"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not in the Hugging Face cache"), "{err}");
    assert!(err.contains("library/tiny/latest`"), "{err}");
    assert!(
        err.contains("`hf download tiny` or `ollama pull tiny`"),
        "{err}"
    );
}

#[test]
fn a_manifest_that_lies_is_a_one_line_error() {
    for (digest, want) in [
        (
            "sha256:../../../../etc/passwd".to_string(),
            "the weights' digest is `sha256:../../../../etc/passwd`, expected `sha256:` and 64 hex digits",
        ),
        (
            format!("sha256:{}", "b".repeat(64)),
            "is missing; `ollama pull tiny:q8` fetches it again",
        ),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        store(tmp.path(), &digest);
        let out = run(tmp.path(), &["info", "tiny:q8"]);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    let tmp = tempfile::tempdir().unwrap();
    store(tmp.path(), "x");
    let manifest = tmp
        .path()
        .join("manifests/registry.ollama.ai/library/tiny/q8");
    std::fs::write(&manifest, "{\"layers\": 3}").unwrap();
    let out = run(tmp.path(), &["info", "tiny:q8"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not an Ollama manifest: no `layers` array"),
        "{err}"
    );
}

#[test]
fn files_under_other_names_are_known_by_their_first_bytes() {
    // A Hugging Face cache blob is named by its hash: a safetensors header
    // (8-byte length, then `{`). Its directory holds the config too here.
    let tmp = tempfile::tempdir().unwrap();
    let blob = tmp.path().join("3f2a9c");
    std::fs::copy(fixture("gpt2-tied/model.safetensors"), &blob).unwrap();
    let v = info(&blob);
    assert_eq!(v["embedding"]["shape"], serde_json::json!([341, 32]));
    // Neither: the error says what the first bytes are not.
    let other = tmp.path().join("notes");
    std::fs::write(&other, "hello").unwrap();
    fails(
        &["info", &other.display().to_string()],
        "its first bytes are neither GGUF's magic nor a safetensors header",
    );
}
