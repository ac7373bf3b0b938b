//! `check`'s training findings on `fixtures/chat`: a chat template whose
//! own tokens have untrained rows (`template-uses-untrained`, exit 1),
//! read from every place a template is kept or given with
//! `--chat-template`; a trained instruct model stays clean; a template
//! that refuses a role, fails or loops is a warning; one that allocates
//! without bound is refused.

use serde_json::Value;

use crate::common::{embscope, fails, fixture, fixture_copy};

/// The untrained chat tokens of `fixtures/chat/base`.
const UNTRAINED: [(u64, &str); 3] = [
    (341, "<|start_header_id|>"),
    (342, "<|end_header_id|>"),
    (343, "<|eot_id|>"),
];

/// `check --json ARGS`: the exit code and the findings.
fn check(args: &[&str]) -> (i32, Vec<Value>) {
    let out = embscope()
        .args(["--json", "check"])
        .args(args)
        .output()
        .expect("runs");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let findings = v["findings"].as_array().expect("findings").clone();
    (out.status.code().expect("exit code"), findings)
}

fn with_code<'a>(findings: &'a [Value], code: &str) -> Vec<&'a Value> {
    findings.iter().filter(|f| f["code"] == code).collect()
}

/// The (id, token) pairs a `template-uses-untrained` finding names, each
/// with both matrices' rows.
fn named(f: &Value) -> Vec<(u64, String)> {
    f["evidence"]["tokens"]
        .as_array()
        .expect("tokens")
        .iter()
        .map(|t| {
            assert_eq!(
                t["rows"],
                serde_json::json!(["model.embed_tokens.weight", "lm_head.weight"]),
                "{t}"
            );
            assert!(t["embed_score"].as_f64().expect("embed score") >= 5.0);
            assert!(t["head_score"].as_f64().expect("head score") >= 5.0);
            (
                t["id"].as_u64().unwrap(),
                t["token"].as_str().unwrap().into(),
            )
        })
        .collect()
}

fn untrained() -> Vec<(u64, String)> {
    UNTRAINED.iter().map(|&(i, t)| (i, t.to_string())).collect()
}

#[test]
fn a_base_model_with_the_instruct_template_beside_it_fails() {
    let (code, findings) = check(&[&fixture("chat/base-templated")]);
    assert_eq!(code, 1);
    let errors = with_code(&findings, "template-uses-untrained");
    assert_eq!(errors.len(), 1, "{findings:?}");
    assert_eq!(errors[0]["severity"], "error");
    assert_eq!(errors[0]["evidence"]["template"], "chat_template.jinja");
    assert_eq!(named(errors[0]), untrained());
}

#[test]
fn a_base_model_without_a_template_has_no_template_finding() {
    let (code, findings) = check(&[&fixture("chat/base")]);
    assert_eq!(code, 0);
    assert!(findings.iter().all(|f| {
        let c = f["code"].as_str().unwrap();
        !c.starts_with("template") && c != "chat-template"
    }));
}

#[test]
fn the_trained_instruct_model_and_its_named_templates_are_clean() {
    let (code, findings) = check(&[&fixture("chat/instruct")]);
    assert_eq!(code, 0, "{findings:?}");
    let infos = with_code(&findings, "chat-template");
    let labels: Vec<&str> = infos
        .iter()
        .map(|f| f["evidence"]["template"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "tokenizer_config.json (default)",
            "tokenizer_config.json (tool_use)"
        ]
    );
    assert!(with_code(&findings, "template-uses-untrained").is_empty());
}

#[test]
fn chat_template_takes_a_jinja_file_a_config_or_another_model() {
    let base = fixture("chat/base");
    for (given, labels) in [
        (
            fixture("chat/llama3.jinja"),
            vec![fixture("chat/llama3.jinja")],
        ),
        (
            fixture("chat/instruct"),
            vec![
                "tokenizer_config.json (default)".to_string(),
                "tokenizer_config.json (tool_use)".to_string(),
            ],
        ),
        (
            fixture("chat/instruct/tokenizer_config.json"),
            vec![
                format!(
                    "{} (default)",
                    fixture("chat/instruct/tokenizer_config.json")
                ),
                format!(
                    "{} (tool_use)",
                    fixture("chat/instruct/tokenizer_config.json")
                ),
            ],
        ),
    ] {
        let (code, findings) = check(&[&base, "--chat-template", &given]);
        assert_eq!(code, 1, "{given}");
        let errors = with_code(&findings, "template-uses-untrained");
        let got: Vec<String> = errors
            .iter()
            .map(|f| f["evidence"]["template"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(got, labels, "{given}");
        for e in errors {
            assert_eq!(named(e), untrained(), "{given}");
        }
    }
    // The instruct model's own rows are trained: its template is fine there.
    let (code, _) = check(&[
        &fixture("chat/instruct"),
        "--chat-template",
        &fixture("chat/llama3.jinja"),
    ]);
    assert_eq!(code, 0);
}

#[test]
fn a_gguf_template_is_read_from_the_metadata() {
    let (code, findings) = check(&[&fixture("chat/gguf-templated.gguf")]);
    assert_eq!(code, 0);
    let infos = with_code(&findings, "chat-template");
    assert_eq!(infos.len(), 1, "{findings:?}");
    assert_eq!(
        infos[0]["evidence"]["template"],
        "GGUF tokenizer.chat_template"
    );
    // `<s>` and `</s>`: the template's own tokens, none of the sample's.
    assert_eq!(infos[0]["evidence"]["tokens"], 2);
}

#[test]
fn templates_that_refuse_fail_or_loop() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    };
    let base = fixture("chat/base");
    // Refuses the system role (as Gemma's and Mistral's do): rendered again
    // without it, and checked.
    let refuses = write(
        "refuses.jinja",
        "{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}<|eot_id|>{% endfor %}",
    );
    let (code, findings) = check(&[&base, "--chat-template", &refuses]);
    assert_eq!(code, 1);
    let e = with_code(&findings, "template-uses-untrained");
    assert_eq!(e[0]["evidence"]["without_system"], true);
    assert_eq!(e[0]["evidence"]["tokens"][0]["id"], 343);
    // Fails whatever it is given: a warning naming the template and line.
    let fails_always = write("fails.jinja", "ok\n{{ raise_exception('never') }}");
    let (code, findings) = check(&[&base, "--chat-template", &fails_always]);
    assert_eq!(code, 0);
    let w = with_code(&findings, "template-unrenderable");
    assert_eq!(w[0]["severity"], "warn");
    let message = w[0]["message"].as_str().unwrap();
    assert!(message.contains("fails.jinja") && message.contains("never at line 2"));
    // Loops and recursion: a render limit, a warning, no hang.
    for (name, text, needle) in [
        (
            "loops.jinja",
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
            "fuel",
        ),
        (
            "recurses.jinja",
            "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
            "recursion",
        ),
    ] {
        let t = write(name, text);
        let start = std::time::Instant::now();
        let (code, findings) = check(&[&base, "--chat-template", &t]);
        assert!(start.elapsed().as_secs() < 30, "{name}");
        assert_eq!(code, 0);
        let w = with_code(&findings, "template-unrenderable");
        assert!(
            w[0]["message"].as_str().unwrap().contains(needle),
            "{name}: {w:?}"
        );
    }
    // Failing with --fail-on warn.
    let out = embscope()
        .args([
            "check",
            &base,
            "--fail-on",
            "warn",
            "--chat-template",
            &fails_always,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_template_that_allocates_without_bound_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let base = fixture("chat/base");
    // Each doubles a value in a few instructions (a terabyte by the end),
    // or copies a large string in a loop: fuel does not see either.
    for (name, text) in [
        (
            "strings.jinja",
            "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}",
        ),
        (
            "lists.jinja",
            "{% set ns = namespace(s=[1]) %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}",
        ),
        (
            "copies.jinja",
            "{% set b = 'x' * 100000000 %}{% for i in range(10000) %}{% set c = b ~ 'y' %}{% endfor %}",
        ),
    ] {
        let t = dir.path().join(name);
        std::fs::write(&t, text).unwrap();
        let t = t.to_string_lossy().into_owned();
        let start = std::time::Instant::now();
        let err = fails(
            &["check", &base, "--chat-template", &t],
            "allocates more than 256 MiB at once or 4 GiB in all",
        );
        assert!(err.contains(name), "{err}");
        assert!(start.elapsed().as_secs() < 30, "{name}");
    }
}

#[test]
fn a_template_file_that_cannot_be_read_is_an_unreadable_file() {
    let cases: [(&str, &str, &str); 3] = [
        (
            "tokenizer_config.json",
            "number",
            "`chat_template` is neither a string nor a list of named templates",
        ),
        (
            "tokenizer_config.json",
            "unnamed",
            "`chat_template` lists an entry without a string `name` and `template`",
        ),
        ("chat_template.json", "not json", "not valid JSON"),
    ];
    for (file, how, fault) in cases {
        let model = fixture_copy("chat/base");
        let path = model.path().join(file);
        let text = match how {
            "not json" => "{bad".to_string(),
            _ => {
                let mut c: Value =
                    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
                c["chat_template"] = match how {
                    "number" => serde_json::json!(123),
                    _ => serde_json::json!([{"name": 1, "template": 2}]),
                };
                c.to_string()
            }
        };
        std::fs::write(&path, text).unwrap();
        let (code, findings) = check(&[model.path().to_str().unwrap()]);
        assert_eq!(code, 1, "{how}");
        let u = with_code(&findings, "unreadable-file");
        assert_eq!(u.len(), 1, "{how}: {u:?}");
        let message = u[0]["message"].as_str().unwrap();
        assert!(
            message.contains(file) && message.contains(fault),
            "{message}"
        );
        assert!(
            message.ends_with("its chat templates are not checked"),
            "{message}"
        );
    }
    // Not JSON at all: one finding for the file, from the special tokens.
    let model = fixture_copy("chat/base");
    std::fs::write(model.path().join("tokenizer_config.json"), "{bad").unwrap();
    let (_, findings) = check(&[model.path().to_str().unwrap()]);
    assert_eq!(with_code(&findings, "unreadable-file").len(), 1);
}

#[test]
fn a_chat_template_that_is_not_there_is_bad_input() {
    let base = fixture("chat/base");
    fails(
        &["check", &base, "--chat-template", "/no/such/template.jinja"],
        "/no/such/template.jinja",
    );
    fails(
        &["check", &base, "--chat-template", &fixture("chat/base")],
        "no chat template there",
    );
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("config.json");
    std::fs::write(&p, r#"{"bos_token": "<s>"}"#).unwrap();
    fails(
        &["check", &base, "--chat-template", p.to_str().unwrap()],
        "chat_template",
    );
}

#[test]
fn data_that_uses_an_untrained_token_is_an_error_naming_it() {
    let (code, findings) = check(&[&fixture("chat/base"), "--data", &fixture("chat/data.jsonl")]);
    assert_eq!(code, 1);
    let e = with_code(&findings, "data-uses-untrained");
    assert_eq!(e.len(), 1, "{findings:?}");
    let tokens = e[0]["evidence"]["tokens"].as_array().unwrap();
    assert_eq!(tokens.len(), 1, "{tokens:?}");
    assert_eq!(tokens[0]["id"], 343);
    assert_eq!(tokens[0]["token"], "<|eot_id|>");
    assert_eq!(tokens[0]["occurrences"], 2);
    assert_eq!(
        tokens[0]["first_line"],
        format!("{}:4", fixture("chat/data.jsonl"))
    );
    // The lines it could not use, by number; the rest are counted.
    let bad = with_code(&findings, "data-bad-lines");
    let lines: Vec<&str> = bad[0]["evidence"]["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["line"].as_str().unwrap())
        .collect();
    let at = |n: u32| format!("{}:{n}", fixture("chat/data.jsonl"));
    assert_eq!(lines, [at(3), at(5)]);
    // `messages` in a model without a template: a warning, counted as text.
    let w = with_code(&findings, "data-messages-without-template");
    assert_eq!(w[0]["evidence"]["first"], at(2));
    let summary = with_code(&findings, "data-summary");
    assert_eq!(summary[0]["evidence"]["lines"], 6);
    assert_eq!(summary[0]["evidence"]["special"][0]["id"], 343);
}

#[test]
fn data_messages_go_through_the_template() {
    // With the instruct template, line 2's messages bring the header
    // tokens too, and the first eot is on line 2.
    let (code, findings) = check(&[
        &fixture("chat/base"),
        "--chat-template",
        &fixture("chat/llama3.jinja"),
        "--data",
        &fixture("chat/data.jsonl"),
        "--data",
        &fixture("chat/data.txt"),
    ]);
    assert_eq!(code, 1);
    assert!(with_code(&findings, "data-messages-without-template").is_empty());
    let e = with_code(&findings, "data-uses-untrained");
    let got: Vec<(u64, u64)> = e[0]["evidence"]["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].as_u64().unwrap(),
                t["occurrences"].as_u64().unwrap(),
            )
        })
        .collect();
    // eot: lines 2 (two turns), 4 and 6 of the JSONL, line 4 of the text.
    assert_eq!(got, [(343, 5), (341, 2), (342, 2)]);
    assert_eq!(
        e[0]["evidence"]["tokens"][0]["first_line"],
        format!("{}:2", fixture("chat/data.jsonl"))
    );
    // The trained instruct model: the same data is fine.
    let (code, findings) = check(&[
        &fixture("chat/instruct"),
        "--data",
        &fixture("chat/data.txt"),
    ]);
    assert_eq!(code, 0, "{findings:?}");
    let summary = with_code(&findings, "data-summary");
    assert_eq!(summary[0]["evidence"]["lines"], 4);
    assert_eq!(summary[0]["evidence"]["untrained_tokens"], 0);
}

#[test]
fn a_data_file_that_is_not_there_is_bad_input() {
    fails(
        &[
            "check",
            &fixture("chat/base"),
            "--data",
            "/no/such/data.jsonl",
        ],
        "/no/such/data.jsonl",
    );
}

#[test]
#[cfg(unix)]
fn a_device_is_no_data_file() {
    fails(
        &["check", &fixture("chat/base"), "--data", "/dev/zero"],
        "`/dev/zero` is not a regular file (a character device); expected a data file",
    );
}

#[test]
fn a_long_line_is_cut_and_the_rest_counted() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("long.txt");
    let mut text = "the king ".repeat(2 << 20);
    text.push_str("\nParis<|eot_id|>\n");
    std::fs::write(&p, text).unwrap();
    let (code, findings) = check(&[&fixture("chat/base"), "--data", p.to_str().unwrap()]);
    assert_eq!(code, 1);
    let summary = with_code(&findings, "data-summary");
    assert_eq!(summary[0]["evidence"]["lines"], 2);
    let e = with_code(&findings, "data-uses-untrained");
    assert_eq!(
        e[0]["evidence"]["tokens"][0]["first_line"],
        format!("{}:2", p.display())
    );
}

#[test]
fn info_lists_the_added_tokens_and_check_names_the_untrained_ones() {
    let v = crate::common::json(&["info", &fixture("chat/base")]);
    let added = v["added_tokens"].as_array().expect("added_tokens");
    assert_eq!(added.len(), 9);
    assert_eq!(
        added[4],
        serde_json::json!({"id": 343, "text": "<|eot_id|>", "special": true})
    );
    assert_eq!(v["tokenizer"]["added"], 9);
    let text = crate::common::text(&["info", "fixtures/chat/base"], 0);
    let line = text
        .lines()
        .find(|l| l.starts_with("added"))
        .expect("added line");
    assert_eq!(
        line,
        "added       9 (9 special): 339 \"<|begin_of_text|>\", 340 \"<|end_of_text|>\", 341 \"<|start_header_id|>\", 342 \"<|end_header_id|>\", … 5 more"
    );
    // The chat tokens, not the placeholders (expected untrained) nor the
    // trained begin and end of text.
    let (_, findings) = check(&[&fixture("chat/base")]);
    let f = with_code(&findings, "added-untrained");
    assert_eq!(f.len(), 1, "{findings:?}");
    assert_eq!(named(f[0]), untrained());
    let (_, findings) = check(&[&fixture("chat/instruct")]);
    assert!(with_code(&findings, "added-untrained").is_empty());
}
