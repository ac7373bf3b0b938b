//! `report` and the `--plot` pictures: the page parses as XML and holds
//! every section with its picture, nothing it would fetch, and each
//! command's JSON exactly as that command prints it (run by the command
//! line the page names); the pictures parse with the elements they are
//! of; exit 0 whatever the page shows; a bad `-o` or `--plot` refused
//! before any work.

use std::path::Path;

use roxmltree::{Document, Node, ParsingOptions};
use serde_json::Value;

use crate::common::{embscope, fails, fixture};

/// Runs `embscope ARGS`, expects exit `code`, returns stdout.
fn run(args: &[&str], code: i32) -> Vec<u8> {
    let out = embscope().args(args).output().expect("runs");
    assert_eq!(
        out.status.code(),
        Some(code),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The page of `args` (`report` and its arguments, `-o` added).
fn report_page(dir: &Path, args: &[&str]) -> String {
    let file = dir.join("page.html");
    let mut all = vec!["report"];
    all.extend(args);
    all.extend(["-o", file.to_str().unwrap()]);
    let stdout = String::from_utf8(run(&all, 0)).unwrap();
    assert!(stdout.starts_with("report  "), "{stdout}");
    std::fs::read_to_string(&file).unwrap()
}

fn parse(xml: &str) -> Document<'_> {
    let options = ParsingOptions {
        allow_dtd: true,
        ..ParsingOptions::default()
    };
    Document::parse_with_options(xml, options).expect("the page parses as XML")
}

/// The element of `doc` with the id `id`.
fn by_id<'a>(doc: &'a Document, id: &str) -> Option<Node<'a, 'a>> {
    doc.descendants().find(|n| n.attribute("id") == Some(id))
}

/// Every text below `node`, joined.
fn text_of(node: Node) -> String {
    (node.descendants())
        .filter(|n| n.is_text())
        .filter_map(|n| n.text())
        .collect()
}

/// Asserts the page has each of `sections`, each with an `<svg>`, no
/// script, and nothing that would be fetched.
fn has_sections(page: &str, sections: &[&str]) {
    let doc = parse(page);
    for id in sections {
        let s = by_id(&doc, id).unwrap_or_else(|| panic!("no section {id}"));
        assert_eq!(s.tag_name().name(), "section");
        assert!(
            s.descendants().any(|n| n.tag_name().name() == "svg"),
            "section {id} has no picture"
        );
    }
    assert!(!page.contains("<script"), "the page holds a script");
    for attr in ["src=", "href=\"http", "url("] {
        assert!(
            !page.contains(attr),
            "the page would fetch something: {attr}"
        );
    }
    assert!(page.contains("@media print"));
}

/// Each JSON block of the page and the command line it names, run: they
/// print the same document. Returns the blocks' ids.
fn json_matches_the_commands(page: &str, exit: impl Fn(&str) -> i32) -> Vec<String> {
    let doc = parse(page);
    let mut ids = Vec::new();
    for pre in doc.descendants().filter(|n| n.tag_name().name() == "pre") {
        let id = pre.attribute("id").unwrap().strip_prefix("json-").unwrap();
        ids.push(id.to_string());
        let shown: Value = serde_json::from_str(&text_of(pre)).expect("the block is JSON");
        let summary = pre.prev_sibling_element().unwrap();
        let line = text_of(summary.last_element_child().unwrap());
        if id == "map" {
            // The report's own JSON holds it.
            assert!(line.contains("report MODEL"), "{line}");
            continue;
        }
        let args = line.strip_prefix("embscope ").unwrap();
        let args: Vec<&str> = args.split_whitespace().collect();
        let printed: Value = serde_json::from_slice(&run(&args, exit(args[1]))).unwrap();
        assert_eq!(shown, printed, "{line}");
    }
    ids
}

#[test]
fn the_page_holds_every_section_and_each_commands_json() {
    let dir = tempfile::tempdir().unwrap();
    let model = fixture("llama-sharded");
    let page = report_page(dir.path(), &[&model]);
    has_sections(&page, &["summary", "check", "undertrained", "map"]);
    assert!(!page.contains("id=\"diff\""));
    let ids = json_matches_the_commands(&page, |_| 0);
    assert_eq!(
        ids,
        [
            "info",
            "size",
            "size-1",
            "size-2",
            "check",
            "undertrained",
            "map"
        ]
    );
    // The report's own JSON holds the same reports, and the map's rows.
    let file = dir.path().join("again.html");
    let v: Value = serde_json::from_slice(&run(
        &["--json", "report", &model, "-o", file.to_str().unwrap()],
        0,
    ))
    .unwrap();
    let check: Value = serde_json::from_slice(&run(&["--json", "check", &model], 0)).unwrap();
    assert_eq!(v["check"], check);
    let map = &v["map"];
    let points = map["points"].as_array().unwrap();
    assert_eq!(map["sample_rows"], 341);
    assert!(points.len() >= 341);
    assert!(points.iter().all(|p| p["x"].is_f64() && p["y"].is_f64()));
    let share = map["variance"].as_array().unwrap();
    assert!(share[0].as_f64().unwrap() >= share[1].as_f64().unwrap());
}

#[test]
fn with_a_base_the_page_holds_the_fine_tune() {
    let dir = tempfile::tempdir().unwrap();
    let (base, tuned) = (fixture("diff/base"), fixture("diff/tuned"));
    let page = report_page(dir.path(), &[&tuned, "--base", &base]);
    has_sections(&page, &["summary", "check", "undertrained", "diff", "map"]);
    // diff exits 1 on a difference; check exits 1 on an error.
    let ids = json_matches_the_commands(&page, |cmd| match cmd {
        "diff" => 1,
        _ => 0,
    });
    assert!(ids.contains(&"diff".to_string()), "{ids:?}");
    let doc = parse(&page);
    let diff = text_of(by_id(&doc, "diff").unwrap());
    for verdict in ["zeros", "copy", "mean", "random", "trained"] {
        assert!(diff.contains(verdict), "{verdict}");
    }
}

#[test]
fn the_page_comes_out_whatever_it_shows() {
    let dir = tempfile::tempdir().unwrap();
    // No tokenizer and a head the config promises but the file lacks:
    // check finds an error, the page comes out with exit 0.
    let page = report_page(dir.path(), &[&fixture("untied-head-missing")]);
    has_sections(&page, &["summary", "check", "undertrained", "map"]);
    let doc = parse(&page);
    assert!(text_of(by_id(&doc, "summary").unwrap()).contains("tokenizer"));
    assert!(text_of(by_id(&doc, "map").unwrap()).contains("No tokenizer"));
    assert!(text_of(by_id(&doc, "check").unwrap()).contains("error"));
    // A matrix of integers: the sections that read values say why not.
    let page = report_page(dir.path(), &[&fixture("dtypes/i32.safetensors")]);
    let doc = parse(&page);
    for id in ["undertrained", "map"] {
        let s = text_of(by_id(&doc, id).unwrap());
        assert!(
            s.contains("Not available") && s.contains("I32"),
            "{id}: {s}"
        );
    }
}

#[test]
fn a_bad_output_is_refused_before_any_work() {
    // The model is not even looked for.
    fails(
        &[
            "report",
            "no-such-model",
            "-o",
            "/nonexistent/dir/page.html",
        ],
        "/nonexistent",
    );
    fails(
        &["report", "no-such-model", "-o", "page.txt"],
        "-o `page.txt`: the report is an HTML page",
    );
    for cmd in [
        vec!["check", "no-such-model"],
        vec!["undertrained", "no-such-model"],
        vec!["diff", "no-such-model", "no-such-model"],
    ] {
        let mut args = cmd.clone();
        args.extend(["--plot", "/nonexistent/dir/p.svg"]);
        fails(&args, "/nonexistent");
        let mut args = cmd;
        args.extend(["--plot", "p.png"]);
        fails(&args, "--plot `p.png`: the picture is SVG");
    }
    fails(&["report", &fixture("llama-sharded")], "--output");
}

/// The picture `args` draw with `--plot`, after checking the exit code.
fn plot(args: &[&str], code: i32) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.svg");
    let mut all = args.to_vec();
    all.extend(["--plot", file.to_str().unwrap()]);
    run(&all, code);
    std::fs::read_to_string(&file).unwrap()
}

/// The texts of `svg`'s `<text>` elements.
fn texts(svg: &str) -> Vec<String> {
    let doc = Document::parse(svg).expect("the picture parses as XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    (doc.descendants())
        .filter(|n| n.tag_name().name() == "text")
        .map(text_of)
        .collect()
}

#[test]
fn the_pictures_are_well_formed_with_what_they_are_of() {
    let model = fixture("untrained");
    let t = texts(&plot(&["check", &model], 0));
    assert!(t.iter().any(|s| s == "L2 norm of the row"), "{t:?}");
    assert!(
        t.iter().any(|s| s.starts_with("untrained-looking")),
        "{t:?}"
    );
    let t = texts(&plot(&["undertrained", &model], 0));
    assert!(t.iter().any(|s| s.starts_with("strong from")), "{t:?}");
    let v: Value = serde_json::from_slice(&run(&["--json", "undertrained", &model], 0)).unwrap();
    let first = &v["candidates"][0];
    let named = match first["token"].as_str() {
        Some(token) => format!("{} \"{token}\"", first["id"]),
        None => first["id"].to_string(),
    };
    assert!(t.contains(&named), "{named} not in {t:?}");
    let (base, tuned) = (fixture("diff/base"), fixture("diff/tuned"));
    let t = texts(&plot(&["diff", &base, &tuned], 1));
    for want in ["cosine", "log10 of relative change", "5 added rows by init"] {
        assert!(t.iter().any(|s| s == want), "{want} not in {t:?}");
    }
    assert!(t.iter().any(|s| s.contains("\" Paris\"")), "{t:?}");
}
