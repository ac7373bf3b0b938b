//! `neighbors --batch`: queries one a line from a file or standard input;
//! a line that cannot be answered is said on stderr with its number and
//! kept in the JSON, the others are answered, and the exit code is 2.

use serde_json::Value;

use crate::common::{embscope, fails, fixture};

/// The lines of the batch, the bad ones with the message each gets.
const LINES: &[(&str, Option<&str>)] = &[
    ("Paris", None),
    ("", None),
    (
        "qqqzz",
        Some(
            "`qqqzz` is not one vocabulary entry but 5 tokens (`q` `q` `q` `z` `z`); to average them use --text \"qqqzz\"",
        ),
    ),
    (
        "#99999",
        Some("id 99999 is out of range: `model.embed_tokens.weight` has 341 rows (ids 0..=340)"),
    ),
    (
        "  king -  ",
        Some("expression `king -` ends with an operator"),
    ),
    (
        "#4x",
        Some(
            "#ID takes a non-negative integer, got \"#4x\"; for the vocabulary entry write \"=#4x\"",
        ),
    ),
    ("king - man + woman", None),
    ("dog", None),
];

/// The batch file's bytes: [`LINES`], then a line that is not UTF-8.
fn batch_bytes() -> Vec<u8> {
    let mut bytes: Vec<u8> = LINES
        .iter()
        .flat_map(|(l, _)| [l.as_bytes(), b"\n"].concat())
        .collect();
    bytes.extend(b"ab\xffc\n");
    bytes
}

/// Runs `neighbors` on the llama fixture with `args`, `stdin` as its input.
fn run(args: &[&str], stdin: Vec<u8>) -> (Option<i32>, Value, String) {
    let out = embscope()
        .args(
            [
                &["--json", "neighbors", &fixture("llama-sharded"), "-k", "3"][..],
                args,
            ]
            .concat(),
        )
        .write_stdin(stdin)
        .output()
        .unwrap();
    let json = serde_json::from_slice(&out.stdout).expect("one JSON document");
    (
        out.status.code(),
        json,
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn bad_lines_fail_alone_with_their_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("queries.txt");
    std::fs::write(&file, batch_bytes()).unwrap();
    let name = file.display().to_string();
    let (code, v, err) = run(&["--batch", &name], Vec::new());
    assert_eq!(code, Some(2), "{err}");
    let answered: Vec<&str> = (v["queries"].as_array().unwrap().iter())
        .map(|q| q["query"].as_str().unwrap())
        .collect();
    assert_eq!(answered, ["Paris", "king - man + woman", "dog"]);
    let mut want: Vec<(usize, String, String)> = (LINES.iter().enumerate())
        .filter_map(|(i, (line, msg))| msg.map(|m| (i + 1, line.trim().to_string(), m.to_string())))
        .collect();
    want.push((
        LINES.len() + 1,
        "ab\u{fffd}c".into(),
        "not UTF-8 text (byte 3 of the line)".into(),
    ));
    let errors: Vec<(usize, String, String)> = (v["errors"].as_array().unwrap().iter())
        .map(|e| {
            let text = |k: &str| e[k].as_str().unwrap().to_string();
            (
                e["line"].as_u64().unwrap() as usize,
                text("query"),
                text("message"),
            )
        })
        .collect();
    assert_eq!(errors, want);
    let said: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("embscope: "))
        .collect();
    let want_said: Vec<String> = (want.iter())
        .map(|(line, _, msg)| format!("embscope: line {line} of {name}: {msg}"))
        .collect();
    assert_eq!(said, want_said);
}

#[test]
fn dash_reads_standard_input() {
    let (code, from_stdin, err) = run(&["--batch", "-"], batch_bytes());
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("embscope: line 3 of standard input: `qqqzz`"),
        "{err}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("q.txt");
    std::fs::write(&file, batch_bytes()).unwrap();
    let (_, from_file, _) = run(&["--batch", file.to_str().unwrap()], Vec::new());
    assert_eq!(from_stdin["queries"], from_file["queries"]);
    assert_eq!(from_stdin["errors"], from_file["errors"]);
    // Good lines only: exit 0, an empty error list.
    let (code, v, _) = run(&["--batch", "-"], b"Paris\n#5\n".to_vec());
    assert_eq!(code, Some(0));
    assert_eq!(v["queries"].as_array().unwrap().len(), 2);
    assert_eq!(v["errors"], serde_json::json!([]));
}

#[test]
fn every_line_failing_is_answered_with_its_errors() {
    let (code, v, err) = run(&["--batch", "-"], b"=nosuchentry\n#400\n".to_vec());
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(v["queries"], serde_json::json!([]));
    assert_eq!(v["errors"].as_array().unwrap().len(), 2);
    assert!(v["kernel"].is_null());
    assert!(
        (v["errors"][0]["message"].as_str().unwrap())
            .starts_with("token `nosuchentry` is not in the vocabulary of"),
        "{v}"
    );
}

#[test]
fn what_fails_every_line_alike_stops_the_batch() {
    // No tokenizer: one line, as for a query on the command line.
    let out = embscope()
        .args([
            "neighbors",
            &fixture("dtypes/f32.safetensors"),
            "--batch",
            "-",
        ])
        .write_stdin("king\nqueen\n")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("query `king` needs a tokenizer"), "{err}");
    // A batch of blank lines asks nothing.
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("blank.txt");
    std::fs::write(&file, "\n  \n").unwrap();
    fails(
        &[
            "neighbors",
            &fixture("llama-sharded"),
            "--batch",
            file.to_str().unwrap(),
        ],
        "no query",
    );
}

#[test]
fn an_endless_line_or_a_device_is_bounded() {
    // A line past the bound fails alone, without being held.
    let mut stdin = b"Paris\n".to_vec();
    stdin.extend(vec![b'x'; 3 << 20]);
    stdin.extend(b"\nParis\n");
    let (code, json, err) = run(&["--batch", "-"], stdin);
    assert_eq!(code, Some(2));
    assert_eq!(json["queries"].as_array().unwrap().len(), 2);
    assert_eq!(json["errors"][0]["line"], 2);
    assert!(
        err.contains("line 2 of standard input: longer than 1024 KiB"),
        "{err}"
    );
    // A device never ends: refused before any work.
    #[cfg(unix)]
    fails(
        &[
            "neighbors",
            &fixture("llama-sharded"),
            "--batch",
            "/dev/zero",
        ],
        "`/dev/zero` is not a regular file (a character device); expected a file of queries",
    );
}
