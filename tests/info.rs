//! `info`: every input form, every tie status, every hostile file.

use std::fs;

use crate::common::{embscope, fails, fixture, fixtures, json, text};

#[test]
fn sharded_llama_reports_embedding_head_and_tie() {
    let v = json(&["info", &fixture("llama-sharded")]);
    let e = &v["embedding"];
    assert_eq!(e["name"], "model.embed_tokens.weight");
    assert_eq!(e["shape"], serde_json::json!([341, 32]));
    assert_eq!(e["dtype"], "BF16");
    assert_eq!(e["bytes"], 341 * 32 * 2);
    assert!(
        e["file"]
            .as_str()
            .unwrap()
            .ends_with("model-00001-of-00002.safetensors")
    );
    let h = &v["head"];
    assert_eq!(h["name"], "lm_head.weight");
    assert!(
        h["file"]
            .as_str()
            .unwrap()
            .ends_with("model-00002-of-00002.safetensors")
    );
    assert_eq!(v["tie"]["config"], false);
    assert_eq!(v["tie"]["resolved"], false);
    assert_eq!(v["tie"]["status"], "untied");
    assert_eq!(v["config"]["model_type"], "llama");
    assert_eq!(v["config"]["vocab_size"], 341);
    assert_eq!(v["tensor_count"], 12);
    let kinds: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "index",
            "shard",
            "shard",
            "config",
            "generation config",
            "tokenizer",
            "tokenizer config",
            "special tokens"
        ]
    );
    assert_eq!(v["tokenizer"]["model"], "BPE");
    assert_eq!(v["tokenizer"]["size"], 341);
    assert_eq!(v["tokenizer"]["added"], 2);
    assert!(json(&["info", &fixture("dtypes/f32.safetensors")])["tokenizer"].is_null());
}

#[test]
fn each_tie_status() {
    for (dir, status, written, resolved, head) in [
        ("llama-sharded", "untied", Some(false), false, true),
        ("gpt2-tied", "tied", None, true, false),
        ("qwen-f16-tied", "tied", Some(true), true, false),
        (
            "tied-head-stored",
            "tied-head-stored",
            Some(true),
            true,
            true,
        ),
        (
            "untied-head-missing",
            "untied-head-missing",
            Some(false),
            false,
            false,
        ),
        ("bert", "no-head", None, true, false),
    ] {
        let v = json(&["info", &fixture(dir)]);
        assert_eq!(v["tie"]["status"], status, "{dir}");
        assert_eq!(v["tie"]["config"], serde_json::json!(written), "{dir}");
        assert_eq!(v["tie"]["resolved"], resolved, "{dir}");
        assert_eq!(!v["head"].is_null(), head, "{dir}");
    }
    let v = json(&["info", &fixture("tied-head-stored")]);
    assert_eq!(v["tie"]["head_identical"], false);
}

#[test]
fn dtypes_of_the_variants() {
    for (dir, dtype) in [
        ("llama-sharded", "BF16"),
        ("gpt2-tied", "F32"),
        ("qwen-f16-tied", "F16"),
        ("bert", "F32"),
    ] {
        assert_eq!(
            json(&["info", &fixture(dir)])["embedding"]["dtype"],
            dtype,
            "{dir}"
        );
    }
}

#[test]
fn input_forms_single_file_and_index_file() {
    let single = json(&["info", &fixture("gpt2-tied/model.safetensors")]);
    assert_eq!(single["embedding"]["name"], "transformer.wte.weight");
    assert_eq!(
        single["config"]["model_type"], "gpt2",
        "config found beside the file"
    );
    let index = json(&[
        "info",
        &fixture("llama-sharded/model.safetensors.index.json"),
    ]);
    assert_eq!(index["head"]["name"], "lm_head.weight");
    let shard = json(&[
        "info",
        &fixture("llama-sharded/model-00002-of-00002.safetensors"),
    ]);
    assert_eq!(
        shard["embedding"]["name"], "model.embed_tokens.weight",
        "a shard its index names opens the whole checkpoint"
    );
}

#[test]
fn directory_of_unindexed_shards_reads_them_all() {
    let tmp = tempfile::tempdir().unwrap();
    for f in [
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
        "config.json",
    ] {
        fs::copy(fixtures().join("llama-sharded").join(f), tmp.path().join(f)).unwrap();
    }
    let v = json(&["info", tmp.path().to_str().unwrap()]);
    assert_eq!(v["tensor_count"], 12);
    assert_eq!(v["tie"]["status"], "untied");
}

/// A Hub cache laid out as huggingface_hub writes it.
fn hub_cache(root: &std::path::Path, revision: &str, commit: &str) {
    let repo = root.join("models--acme--tiny-llama");
    let snap = repo.join("snapshots").join(commit);
    fs::create_dir_all(&snap).unwrap();
    fs::create_dir_all(repo.join("refs")).unwrap();
    fs::write(repo.join("refs").join(revision), commit).unwrap();
    for f in fs::read_dir(fixtures().join("llama-sharded")).unwrap() {
        let f = f.unwrap().path();
        fs::copy(&f, snap.join(f.file_name().unwrap())).unwrap();
    }
}

#[test]
fn hub_id_resolves_in_the_local_cache() {
    // `info --json` with one environment variable set; the report on success.
    let run = |var: &str, root: &std::path::Path, args: &[&str]| {
        embscope().env(var, root).args(args).output().unwrap()
    };
    let report = |out: std::process::Output| -> serde_json::Value {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let tmp = tempfile::tempdir().unwrap();
    hub_cache(tmp.path(), "main", "0123abcd");
    let v = report(run(
        "HF_HUB_CACHE",
        tmp.path(),
        &["--json", "info", "acme/tiny-llama"],
    ));
    assert_eq!(v["hub"]["commit"], "0123abcd");
    assert_eq!(v["embedding"]["name"], "model.embed_tokens.weight");

    // HF_HOME/hub, another revision by ref, and a revision that is not there.
    let home = tempfile::tempdir().unwrap();
    hub_cache(&home.path().join("hub"), "v1", "feedbeef");
    let v = report(run(
        "HF_HOME",
        home.path(),
        &["--json", "--revision", "v1", "info", "acme/tiny-llama"],
    ));
    assert_eq!(v["hub"]["commit"], "feedbeef");
    let out = run("HF_HOME", home.path(), &["info", "acme/tiny-llama"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("revision `main` is not in the cache"));
    // A ref naming `..` does not lead out of the snapshots.
    let refs = home.path().join("hub/models--acme--tiny-llama/refs");
    std::fs::write(refs.join("up"), "..").unwrap();
    let out = run(
        "HF_HOME",
        home.path(),
        &["--revision", "up", "info", "acme/tiny-llama"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("revision `up` is not in the cache"));
}

#[test]
fn hub_id_not_cached_is_an_error_that_says_it_never_downloads() {
    fails(&["info", "acme/not-here"], "never downloads");
}

#[test]
fn hostile_files_exit_2_naming_the_file() {
    for (file, what) in [
        ("broken/truncated.safetensors", "beyond the data area"),
        (
            "broken/bad-header-len.safetensors",
            "runs past the end of the file",
        ),
        ("broken/bad-json.safetensors", "not valid JSON"),
        ("broken/overlap.safetensors", "overlap"),
        (
            "broken/missing-shard",
            "names shard `model-00002-of-00002.safetensors`, which does not exist",
        ),
    ] {
        for cmd in ["info", "tensors", "size"] {
            let err = fails(&[cmd, &fixture(file)], what);
            let named = if file.ends_with("missing-shard") {
                "model.safetensors.index.json"
            } else {
                file
            };
            assert!(err.contains(named), "{err}");
        }
    }
    // An empty file maps to nothing and is refused by the header check.
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty.safetensors");
    std::fs::write(&empty, b"").unwrap();
    fails(
        &["info", &empty.display().to_string()],
        "file is 0 bytes, too short",
    );
}

#[test]
fn a_tensor_named_twice_is_refused_by_every_command_but_check() {
    let file = fixture("broken/duplicate-tensor-name.safetensors");
    let said = "the header gives tensor `embed_tokens.weight` twice; transformers and candle refuse it (safetensors: ";
    for args in [
        &["info", &file][..],
        &["tensors", &file],
        &["size", &file],
        &["lookup", &file, "--id", "1"],
        &["neighbors", &file, "#1"],
        &["undertrained", &file],
    ] {
        let err = fails(args, said);
        assert!(err.contains(&file), "{err}");
    }
    // `check` reports it as an error finding and audits the entry read
    // (the second), exit 1.
    let out = embscope()
        .args(["--json", "check", &file])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let finding = &report["findings"][0];
    assert_eq!(finding["code"], "duplicate-tensor-name");
    assert_eq!(finding["severity"], "error");
    assert_eq!(finding["evidence"]["names"][0], "embed_tokens.weight");
    assert!(finding["message"].as_str().unwrap().contains(said));
    assert_eq!(report["embedding"], "embed_tokens.weight");
    let codes: Vec<&str> = (report["findings"].as_array().unwrap().iter())
        .filter_map(|f| f["code"].as_str())
        .collect();
    assert!(codes.contains(&"norm-summary"), "{codes:?}");
}

#[test]
fn missing_path_and_wrong_file_kind() {
    fails(&["info", "./no/such/model"], "no such file or directory");
    // A device or a FIFO is there, but is no file to read (a FIFO's open
    // would wait for a writer).
    fails(&["info", "/dev/zero"], "`/dev/zero` is not a regular file");
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("x.safetensors");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        fails(
            &["tensors", &fifo.display().to_string()],
            "is not a regular file",
        );
    }
    fails(
        &["info", &fixture("llama-sharded/config.json")],
        "expected a .safetensors file",
    );
}

#[test]
fn index_naming_a_tensor_its_shard_lacks() {
    let tmp = tempfile::tempdir().unwrap();
    let src = fixtures().join("llama-sharded");
    for f in [
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
    ] {
        fs::copy(src.join(f), tmp.path().join(f)).unwrap();
    }
    let index = fs::read_to_string(src.join("model.safetensors.index.json"))
        .unwrap()
        .replace(
            "\"lm_head.weight\": \"model-00002",
            "\"lm_head.weight\": \"model-00001",
        );
    fs::write(tmp.path().join("model.safetensors.index.json"), index).unwrap();
    fails(
        &["info", tmp.path().to_str().unwrap()],
        "names tensor `lm_head.weight` in `model-00001-of-00002.safetensors`, but it is in",
    );
}

#[test]
fn human_output_names_the_roles() {
    let text = text(&["info", &fixture("gpt2-tied")], 0);
    assert!(
        text.contains("embedding   transformer.wte.weight  [341, 32]  F32"),
        "{text}"
    );
    assert!(
        text.contains("tie         tied (head is the embedding; not stored)"),
        "{text}"
    );
}
