//! Reading templates from every place, and rendering within the limits.

use super::*;

fn template(text: &str) -> ChatTemplate {
    ChatTemplate {
        origin: "test".into(),
        name: None,
        text: text.into(),
    }
}

fn sample() -> Vec<Message> {
    vec![
        Message {
            role: "system",
            content: "  S ".into(),
        },
        Message {
            role: "user",
            content: "U".into(),
        },
    ]
}

#[test]
fn python_methods_tokens_and_the_generation_prompt_render() {
    let t = template(
        "{{ bos_token }}{% for m in messages %}{{ m['role'].upper() }}:{{ m.content.strip() }}|{% endfor %}{% if add_generation_prompt %}A:{% endif %}{{ strftime_now('%d %b %Y') }}",
    );
    let tokens = TemplateTokens::from([("bos_token".to_string(), "<s>".to_string())]);
    let out = render(&t, &tokens, &sample(), true).unwrap();
    assert_eq!(out, "<s>SYSTEM:S|USER:U|A:26 Jul 2024");
}

#[test]
fn raise_exception_loops_recursion_and_growth_fail_with_a_line() {
    let tokens = TemplateTokens::new();
    let raised = template("ok\n{{ raise_exception('System role not supported') }}");
    let err = render(&raised, &tokens, &sample(), true).unwrap_err();
    assert_eq!(err.0, "System role not supported at line 2");
    let looping = template(
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    );
    let err = render(&looping, &tokens, &sample(), true).unwrap_err();
    assert!(err.0.contains("fuel"), "{}", err.0);
    let recursing = template("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
    let err = render(&recursing, &tokens, &sample(), true).unwrap_err();
    assert!(err.0.contains("recursion"), "{}", err.0);
    let growing = template("{% for i in range(10000) %}{{ 'x' * 1000 }}{% endfor %}");
    let err = render(&growing, &tokens, &sample(), true).unwrap_err();
    assert!(err.0.contains("grows past"), "{}", err.0);
    let huge = template(&"x".repeat(MAX_TEMPLATE_BYTES + 1));
    assert!(render(&huge, &tokens, &sample(), true).is_err());
    let broken = template("{% for %}");
    let err = render(&broken, &tokens, &sample(), true).unwrap_err();
    assert!(err.0.ends_with("at line 1"), "{}", err.0);
}

#[test]
fn templates_are_read_from_every_file_and_named_lists() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("chat_template.jinja"), "J").unwrap();
    std::fs::write(
        dir.path().join("chat_template.json"),
        r#"{"chat_template": "C"}"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("tokenizer_config.json"),
        r#"{"bos_token": {"content": "<s>"}, "eos_token": "</s>",
            "chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T"}]}"#,
    )
    .unwrap();
    let (found, tokens) = in_dir(dir.path()).unwrap();
    let labels: Vec<String> = found.iter().map(ChatTemplate::label).collect();
    assert_eq!(
        labels,
        [
            "chat_template.jinja",
            "chat_template.json",
            "tokenizer_config.json (default)",
            "tokenizer_config.json (tool_use)"
        ]
    );
    assert_eq!(tokens["bos_token"], "<s>");
    assert_eq!(tokens["eos_token"], "</s>");
    // A user's file: JSON with the key, or the text as a template.
    let (found, _) = from_file(&dir.path().join("tokenizer_config.json")).unwrap();
    assert_eq!(found.len(), 2);
    let (found, _) = from_file(&dir.path().join("chat_template.jinja")).unwrap();
    assert_eq!(found[0].text, "J");
    std::fs::write(dir.path().join("other.json"), r#"{"a": 1}"#).unwrap();
    let err = from_file(&dir.path().join("other.json")).unwrap_err();
    assert!(err.to_string().contains("chat_template"), "{err}");
    assert!(from_file(&dir.path().join("missing.jinja")).is_err());
    std::fs::write(
        dir.path().join("tokenizer_config.json"),
        r#"{"chat_template": 3}"#,
    )
    .unwrap();
    assert!(in_dir(dir.path()).is_err());
}

#[test]
fn gguf_templates_default_then_named() {
    let metadata = HashMap::from([
        (
            "tokenizer.chat_template.tool_use".to_string(),
            GgufValue::String("T".into()),
        ),
        (
            "tokenizer.chat_template".to_string(),
            GgufValue::String("D".into()),
        ),
        ("tokenizer.chat_templates".to_string(), GgufValue::U32(1)),
    ]);
    let found = in_gguf(&metadata);
    let labels: Vec<String> = found.iter().map(ChatTemplate::label).collect();
    assert_eq!(
        labels,
        [
            "GGUF tokenizer.chat_template",
            "GGUF tokenizer.chat_template (tool_use)"
        ]
    );
}
