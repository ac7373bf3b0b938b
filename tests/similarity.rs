//! `similarity`: cosines exact against an f64 computation from the rows
//! `lookup` returns, groups next to each other in the order, the CSV and
//! JSON columns, a picture that parses as XML with a cell per pair and a
//! label per query, and bad input refused before any work.

use serde_json::Value;

use crate::common::{cosine, embscope, fails, fixture, json};

/// The rows of `ids` of `model`'s embedding, as f64.
fn rows(model: &str, ids: &[u64]) -> Vec<Vec<f64>> {
    let ids: Vec<String> = ids.iter().map(u64::to_string).collect();
    let mut args = vec!["lookup", model, "--id"];
    args.extend(ids.iter().map(String::as_str));
    values(&json(&args))
}

/// The values of `lookup`'s rows: f32 in JSON, read back exactly.
fn values(lookup: &Value) -> Vec<Vec<f64>> {
    lookup["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| f64::from(x.as_f64().unwrap() as f32))
                .collect()
        })
        .collect()
}

fn matrix(v: &Value) -> Vec<Vec<f64>> {
    v["cosine"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect()
        })
        .collect()
}

#[test]
fn cosines_are_exact_in_every_dtype() {
    // ` Paris`, ` France`, ` cat`, ` dog`, ` apple` and two random rows.
    let ids = [285u64, 291, 316, 319, 324, 7, 100];
    for model in ["llama-sharded", "gpt2-tied", "qwen-f16-tied"] {
        let model = fixture(model);
        let queries: Vec<String> = ids.iter().map(|i| format!("#{i}")).collect();
        let mut args = vec!["similarity", model.as_str()];
        args.extend(queries.iter().map(String::as_str));
        let got = matrix(&json(&args));
        let want = rows(&model, &ids);
        for i in 0..ids.len() {
            assert_eq!(got[i][i], 1.0, "{model}");
            for j in 0..ids.len() {
                let w = cosine(&want[i], &want[j]);
                assert!(
                    (got[i][j] - w).abs() < 1e-12,
                    "{model} {i} {j}: {} vs {w}",
                    got[i][j]
                );
                assert_eq!(got[i][j], got[j][i]);
            }
        }
    }
}

#[test]
fn words_expressions_and_texts_resolve_as_in_neighbors() {
    let model = fixture("llama-sharded");
    let v = json(&[
        "similarity",
        &model,
        "cat",
        "#319",
        "king - man + woman",
        "queen",
        "--text",
        "the cat",
    ]);
    let q = v["queries"].as_array().unwrap();
    assert_eq!(q.len(), 5);
    assert_eq!(q[0]["query"], "cat");
    assert_eq!(q[0]["ids"], serde_json::json!([316]));
    assert_eq!(q[0]["tokens"], serde_json::json!([" cat"]));
    assert_eq!(q[1]["tokens"], serde_json::json!([" dog"]));
    assert_eq!(q[2]["ids"], serde_json::json!([259, 267, 272]));
    assert_eq!(q[4]["query"], "--text \"the cat\"");
    let c = matrix(&v);
    // The planted analogy: king - man + woman lies next to queen.
    assert!(c[2][3] > 0.95, "{}", c[2][3]);
    // The text's mean row against the f64 mean of its rows.
    let r = values(&json(&["lookup", &model, "--text", "the cat"]));
    let mean: Vec<f64> = (0..r[0].len())
        .map(|d| r.iter().map(|row| row[d]).sum::<f64>() / r.len() as f64)
        .collect();
    let cat = rows(&model, &[316]).remove(0);
    assert!((c[0][4] - cosine(&cat, &mean)).abs() < 1e-6);
    assert_eq!(v["matrix"], "model.embed_tokens.weight");
    assert_eq!(v["role"], "embed");
}

#[test]
fn the_order_keeps_groups_together_and_the_map_has_every_query() {
    let words = [
        "cat", "Paris", "apple", "king", "dog", "France", "banana", "queen",
    ];
    let mut args = vec!["similarity".to_string(), fixture("llama-sharded")];
    args.extend(words.iter().map(|w| w.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let v = json(&args);
    let order: Vec<usize> = v["order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_u64().unwrap() as usize)
        .collect();
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..8).collect::<Vec<_>>());
    let place = |w: &str| {
        let i = words.iter().position(|x| *x == w).unwrap();
        order.iter().position(|&o| o == i).unwrap()
    };
    for (a, b) in [
        ("cat", "dog"),
        ("Paris", "France"),
        ("apple", "banana"),
        ("king", "queen"),
    ] {
        assert_eq!(place(a).abs_diff(place(b)), 1, "{a} and {b}: {order:?}");
    }
    let points = v["map"]["points"].as_array().unwrap();
    assert_eq!(points.len(), 8);
    let variance: Vec<f64> = v["map"]["variance"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert!(variance[0] >= variance[1] && variance[0] + variance[1] <= 1.0 + 1e-9);
}

#[test]
fn csv_and_table_hold_the_same_matrix() {
    let model = fixture("llama-sharded");
    let args = ["similarity", &model, "cat", "dog", "#5"];
    let v = json(&args);
    let out = embscope()
        .args(args)
        .args(["--format", "csv"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let csv = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "query,cat,dog,#5");
    assert_eq!(lines.len(), 4);
    let c = matrix(&v);
    for (i, line) in lines[1..].iter().enumerate() {
        let cells: Vec<&str> = line.split(',').collect();
        let values: Vec<f64> = cells[1..].iter().map(|x| x.parse().unwrap()).collect();
        assert_eq!(values, c[i], "{line}");
    }
    let out = embscope().args(args).output().unwrap();
    let table = String::from_utf8(out.stdout).unwrap();
    let first = table.lines().nth(1).unwrap();
    assert!(
        first.starts_with("cat ") && first.contains("1.0000"),
        "{table}"
    );
    assert!(table.contains("#5 \"&\""), "{table}");
}

#[test]
fn the_picture_is_xml_with_a_cell_per_pair_and_a_label_per_query() {
    let dir = tempfile::tempdir().unwrap();
    let plot = dir.path().join("sim.svg");
    let words = ["cat", "dog", "apple", "banana", "<b>", "Paris"];
    let out = embscope()
        .args(["similarity", &fixture("llama-sharded")])
        .args(&words[..4])
        .args(["#5", "=ĠParis", "--plot", plot.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let svg = std::fs::read_to_string(&plot).unwrap();
    let doc = roxmltree::Document::parse(&svg).expect("well-formed XML");
    let with_class = |name: &str, class: &str| {
        doc.descendants()
            .filter(|n| n.has_tag_name(name) && n.attribute("class") == Some(class))
            .map(|n| n.text().unwrap_or("").to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(with_class("rect", "cell").len(), 36);
    let mut rows = with_class("text", "row-label");
    rows.sort();
    let mut want = vec!["cat", "dog", "apple", "banana", "#5 \"&\"", "=ĠParis"];
    want.sort();
    assert_eq!(rows, want);
    assert_eq!(with_class("text", "col-label").len(), 6);
    assert_eq!(with_class("path", "point").len(), 6);
    assert_eq!(doc.root_element().tag_name().name(), "svg");
}

#[test]
fn bad_input_is_refused_before_any_work() {
    let model = fixture("llama-sharded");
    // The plot's place is checked first: the model is not even looked for.
    fails(
        &[
            "similarity",
            "no-such-model",
            "cat",
            "--plot",
            "/no/such/dir/p.svg",
        ],
        "cannot write `/no/such/dir/p.svg`: directory `/no/such/dir` does not exist",
    );
    fails(
        &["similarity", &model, "cat", "--plot", "p.png"],
        "--plot `p.png`: the picture is SVG; give a file name ending in .svg",
    );
    fails(&["similarity", &model], "no query");
    fails(
        &["similarity", &model, "=kign"],
        "token `kign` is not in the vocabulary",
    );
    fails(
        &["similarity", &model, "#99999"],
        "id 99999 is out of range",
    );
    fails(
        &["--json", "similarity", &model, "cat", "--format", "csv"],
        "--json and --format csv contradict each other",
    );
    let many: Vec<String> = (0..1025).map(|i| format!("#{}", i % 300)).collect();
    let mut args = vec!["similarity", model.as_str()];
    args.extend(many.iter().map(String::as_str));
    fails(
        &args,
        "1025 queries given; similarity compares at most 1024",
    );
    let mut args = vec!["similarity", model.as_str(), "--plot", "p.svg"];
    args.extend(many[..257].iter().map(String::as_str));
    fails(&args, "--plot draws at most 256 queries (257 given)");
}

#[cfg(target_os = "linux")]
#[test]
fn a_directory_that_takes_no_file_is_refused_at_once() {
    // sysfs takes no new file, whoever asks (root included).
    fails(
        &[
            "similarity",
            "no-such-model",
            "cat",
            "--plot",
            "/sys/embscope.svg",
        ],
        "cannot write `/sys/embscope.svg`",
    );
}
