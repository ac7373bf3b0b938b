//! `tensors`: rows, glob filter, sort order.

use crate::common::{fails, fixture, json};

#[test]
fn lists_every_tensor_sorted_by_name() {
    let v = json(&["tensors", &fixture("llama-sharded")]);
    let names: Vec<&str> = v["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 12);
    assert_eq!(names[0], "lm_head.weight");
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    let first = &v["tensors"][0];
    assert_eq!(first["dtype"], "BF16");
    assert_eq!(first["params"], 341 * 32);
    assert_eq!(first["bytes"], 341 * 32 * 2);
}

#[test]
fn filter_glob_and_sort_by_size() {
    let v = json(&[
        "tensors",
        &fixture("llama-sharded"),
        "--filter",
        "*proj*",
        "--sort",
        "size",
    ]);
    assert_eq!(v["count"], 7);
    let bytes: Vec<u64> = v["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["bytes"].as_u64().unwrap())
        .collect();
    assert!(bytes.windows(2).all(|w| w[0] >= w[1]), "{bytes:?}");
    assert_eq!(v["total_bytes"], bytes.iter().sum::<u64>());
    fails(
        &["tensors", &fixture("llama-sharded"), "--filter", "a[b"],
        "--filter `a[b` is not a valid glob",
    );
}
