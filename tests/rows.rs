//! `rows`: every row with the figures `undertrained` computes, the same
//! numbers; CSV, JSON and a structured `.npy` (its header and records
//! parsed here) holding the same; kinds named from the tokenizer; and
//! output places that cannot be written refused before any work.

use std::collections::HashMap;

use serde_json::Value;

use crate::common::{embscope, fails, fixture, json};

/// The columns, in order.
const COLUMNS: [&str; 10] = [
    "id",
    "token",
    "kind",
    "embed_norm",
    "head_norm",
    "head_cosine",
    "embed_distance",
    "score",
    "strong",
    "reference",
];

fn rows(v: &Value) -> &Vec<Value> {
    v["rows"].as_array().expect("rows")
}

/// `rows` of `model` written to a file of `name` in a temporary directory,
/// and its bytes.
fn written(model: &str, name: &str, extra: &[&str]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    let out = embscope()
        .args(["rows", model, "-o", path.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    std::fs::read(&path).unwrap()
}

#[test]
fn every_row_carries_the_numbers_undertrained_ranks() {
    let model = fixture("untrained");
    let ranked = json(&[
        "undertrained",
        &model,
        "--top",
        "1000",
        "--include-reference",
    ]);
    let all = json(&["rows", &model]);
    assert_eq!(rows(&all).len(), 345);
    assert_eq!(all["indicators"], ranked["indicators"]);
    assert_eq!(all["reference_rows"], 6);
    assert_eq!(all["tied"], false);
    let candidates = ranked["candidates"].as_array().unwrap();
    assert_eq!(candidates.len(), 345);
    for c in candidates {
        let id = c["id"].as_u64().unwrap();
        let row = &rows(&all)[id as usize];
        assert_eq!(row["id"], id);
        for key in [
            "token",
            "score",
            "strong",
            "reference",
            "embed_norm",
            "head_norm",
            "head_cosine",
            "embed_distance",
        ] {
            assert_eq!(row[key], c[key], "row {id}: {key}");
        }
    }
    // The same with ids given as the reference set.
    let given = json(&["rows", &model, "--reference", "5-7"]);
    let refs: Vec<u64> = rows(&given)
        .iter()
        .filter(|r| r["reference"] == true)
        .map(|r| r["id"].as_u64().unwrap())
        .collect();
    assert_eq!(refs, [5, 6, 7]);
}

#[test]
fn kinds_come_from_the_tokenizer() {
    let kinds = |model: &str| -> HashMap<u64, String> {
        rows(&json(&["rows", &fixture(model)]))
            .iter()
            .map(|r| {
                (
                    r["id"].as_u64().unwrap(),
                    r["kind"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let u = kinds("untrained");
    for (id, kind) in [
        (180, "byte"),
        (338, "normal"),
        (339, "reserved"),
        (342, "reserved"),
        (343, "padding"),
        (344, "padding"),
    ] {
        assert_eq!(u[&id], kind, "untrained #{id}");
    }
    let l = kinds("llama-sharded");
    assert_eq!(l[&0], "normal");
    assert_eq!(l[&(l.len() as u64 - 1)], "special");
    // A tied model has no head of its own.
    let tied = json(&["rows", &fixture("gpt2-tied")]);
    assert_eq!(tied["tied"], true);
    assert!(rows(&tied).iter().all(|r| r["head_norm"].is_null()));
    assert!(rows(&tied).iter().all(|r| r["embed_norm"].is_f64()));
}

#[test]
fn csv_has_a_column_per_figure_and_the_json_numbers() {
    let model = fixture("untrained");
    let all = json(&["rows", &model]);
    let csv = String::from_utf8(written(&model, "rows.csv", &[])).unwrap();
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    assert_eq!(reader.headers().unwrap(), COLUMNS.as_slice());
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(records.len(), 345);
    for (rec, row) in records.iter().zip(rows(&all)) {
        assert_eq!(rec[0].parse::<u64>().unwrap(), row["id"]);
        assert_eq!(&rec[1], row["token"].as_str().unwrap_or(""));
        assert_eq!(&rec[2], row["kind"].as_str().unwrap());
        for (k, key) in [(3, "embed_norm"), (4, "head_norm"), (5, "head_cosine")] {
            let want = row[key].as_f64().unwrap() as f32;
            assert_eq!(rec[k].parse::<f32>().unwrap(), want, "{key}");
        }
        same_f64(rec[7].parse().unwrap(), &row["score"]);
        assert_eq!(&rec[8], row["strong"].to_string());
        assert_eq!(&rec[9], row["reference"].to_string());
    }
    // Without -o, CSV on stdout.
    let out = embscope().args(["rows", &model]).output().unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), csv);
    // A tied model's head_norm is empty.
    let tied = String::from_utf8(written(&fixture("gpt2-tied"), "t.csv", &[])).unwrap();
    let line = tied.lines().nth(1).unwrap();
    assert_eq!(line.split(',').nth(4), Some(""), "{line}");
}

/// `x` is the JSON number `v`: to within the last place, as serde_json
/// reads a float (it rounds correctly only with its `float_roundtrip`
/// feature).
fn same_f64(x: f64, v: &Value) {
    let want = v.as_f64().unwrap();
    assert!(
        (x - want).abs() <= want.abs() * 2.0 * f64::EPSILON,
        "{x} vs {want}"
    );
}

/// A `.npy` file of one structured array, read as numpy reads it.
struct Npy {
    fields: Vec<(String, String)>,
    shape: usize,
    data: Vec<u8>,
}

fn parse_npy(bytes: &[u8]) -> Npy {
    assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00", "magic and version 1.0");
    let len = usize::from(u16::from_le_bytes([bytes[8], bytes[9]]));
    assert_eq!((10 + len) % 64, 0, "header padded to 64 bytes");
    let header = std::str::from_utf8(&bytes[10..10 + len]).unwrap();
    assert!(header.ends_with('\n'));
    assert!(header.contains("'fortran_order': False"), "{header}");
    let descr = header
        .split_once("'descr': [")
        .and_then(|(_, rest)| rest.split_once("]"))
        .unwrap()
        .0;
    let fields = descr
        .split("), (")
        .map(|f| {
            let f = f.trim_matches(|c| c == '(' || c == ')');
            let (name, t) = f.split_once(", ").unwrap();
            (
                name.trim_matches('\'').to_string(),
                t.trim_matches('\'').to_string(),
            )
        })
        .collect();
    let shape = header
        .split_once("'shape': (")
        .and_then(|(_, rest)| rest.split_once(",)"))
        .unwrap()
        .0
        .parse()
        .unwrap();
    Npy {
        fields,
        shape,
        data: bytes[10 + len..].to_vec(),
    }
}

/// The size in bytes of a field of numpy type `t`.
fn size_of(t: &str) -> usize {
    match t {
        "|b1" => 1,
        "<u4" | "<f4" => 4,
        "<f8" => 8,
        u => 4 * u.strip_prefix("<U").unwrap().parse::<usize>().unwrap(),
    }
}

#[test]
fn npy_is_one_structured_array_with_the_json_numbers() {
    let model = fixture("untrained");
    let all = json(&["rows", &model]);
    let npy = parse_npy(&written(&model, "rows.npy", &[]));
    let names: Vec<&str> = npy.fields.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, COLUMNS);
    let types: Vec<&str> = npy.fields.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(
        types[3..],
        ["<f4", "<f4", "<f4", "<f4", "<f8", "|b1", "|b1"]
    );
    assert_eq!(types[2], "<U12");
    assert_eq!(npy.shape, 345);
    let record: usize = npy.fields.iter().map(|(_, t)| size_of(t)).sum();
    assert_eq!(npy.data.len(), record * 345);
    for (i, row) in rows(&all).iter().enumerate() {
        let mut at = i * record;
        let mut field = |t: &str| {
            let bytes = &npy.data[at..at + size_of(t)];
            at += size_of(t);
            bytes.to_vec()
        };
        let text = |b: Vec<u8>| -> String {
            b.chunks(4)
                .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                .take_while(|&c| c != 0)
                .map(|c| char::from_u32(c).unwrap())
                .collect()
        };
        let f32_of = |b: Vec<u8>| f32::from_le_bytes(b.try_into().unwrap());
        assert_eq!(
            u32::from_le_bytes(field("<u4").try_into().unwrap()),
            i as u32
        );
        assert_eq!(text(field(types[1])), row["token"].as_str().unwrap_or(""));
        assert_eq!(text(field("<U12")), row["kind"].as_str().unwrap());
        for key in ["embed_norm", "head_norm", "head_cosine", "embed_distance"] {
            assert_eq!(
                f32_of(field("<f4")),
                row[key].as_f64().unwrap() as f32,
                "{key}"
            );
        }
        same_f64(
            f64::from_le_bytes(field("<f8").try_into().unwrap()),
            &row["score"],
        );
        assert_eq!(field("|b1"), [u8::from(row["strong"] == true)]);
        assert_eq!(field("|b1"), [u8::from(row["reference"] == true)]);
    }
    // Missing figures are NaN: a tied model's head_norm.
    let tied = parse_npy(&written(&fixture("gpt2-tied"), "t.npy", &[]));
    let width = size_of(&tied.fields[1].1);
    let at = 4 + width + 48 + 4;
    assert!(f32::from_le_bytes(tied.data[at..at + 4].try_into().unwrap()).is_nan());
}

#[test]
fn bad_output_places_are_refused_before_any_work() {
    let model = fixture("untrained");
    // The output's place is checked first: the model is not even looked for.
    fails(
        &["rows", "no-such-model", "-o", "/no/such/dir/rows.csv"],
        "cannot write `/no/such/dir/rows.csv`: directory `/no/such/dir` does not exist",
    );
    let dir = tempfile::tempdir().unwrap();
    fails(
        &["rows", "no-such-model", "-o", dir.path().to_str().unwrap()],
        "it is a directory; expected a file name",
    );
    fails(
        &["rows", &model, "--format", "npy"],
        "--format npy writes binary: give a file with -o FILE",
    );
    fails(
        &["rows", &model, "-o", "x.npy", "--format", "csv"],
        "-o `x.npy` names a .npy file but --format csv was given",
    );
    fails(
        &["rows", &model, "--reference", "x"],
        "--reference: `x` is not a non-negative integer id",
    );
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}

#[test]
fn a_device_or_pipe_is_written_in_place() {
    // `/dev/stdout` is the test's pipe: written through, not replaced.
    let model = fixture("untrained");
    let out = embscope()
        .args(["rows", &model, "-o", "/dev/stdout", "--format", "csv"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 346);
    assert!(text.starts_with("id,token,kind,"));
}
