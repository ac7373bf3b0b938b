//! `size`: totals, vocabulary share, tying, what-if figures.

use crate::common::{fails, fixture, json};

#[test]
fn untied_totals_and_shares() {
    let v = json(&["size", &fixture("llama-sharded")]);
    let layer = 341 * 32;
    assert_eq!(v["total_params"], 32_160);
    assert_eq!(v["total_bytes"], 64_320);
    assert_eq!(v["by_dtype"][0]["dtype"], "BF16");
    assert_eq!(v["embedding_params"], layer);
    assert_eq!(v["head_params"], layer);
    let share = v["vocab_share"].as_f64().unwrap();
    assert!((share - 2.0 * layer as f64 / 32_160.0).abs() < 1e-12);
    assert_eq!(v["tying"]["tied"], false);
    assert_eq!(v["tying"]["bytes"], layer * 2);
}

#[test]
fn tied_model_says_what_tying_saved() {
    let v = json(&["size", &fixture("gpt2-tied")]);
    assert_eq!(v["head_params"], 0);
    assert_eq!(v["tie_status"], "tied");
    assert_eq!(v["tying"]["tied"], true);
    assert_eq!(v["tying"]["bytes"], 341 * 32 * 4);
}

#[test]
fn what_if_vocab_dtype_and_untie() {
    let v = json(&[
        "size",
        &fixture("gpt2-tied"),
        "--vocab",
        "1000",
        "--dtype",
        "bf16",
        "--untie",
    ]);
    let w = &v["what_if"];
    assert_eq!(w["vocab"], 1000);
    assert_eq!(w["embedding_params"], 32_000);
    assert_eq!(w["head_params"], 32_000);
    let others = 19_136 - 341 * 32;
    assert_eq!(w["total_params"], others + 64_000);
    assert_eq!(
        w["total_bytes"],
        (others + 64_000) * 2,
        "every float tensor as BF16"
    );
    assert_eq!(w["delta_params"], others + 64_000 - 19_136);

    let t = json(&["size", &fixture("llama-sharded"), "--tie", "--hidden", "8"])["what_if"].clone();
    assert_eq!(t["head_params"], 0);
    assert_eq!(t["embedding_params"], 341 * 8);
    assert_eq!(t["delta_bytes"], -(341 * 32 * 2 * 2 - 341 * 8 * 2));
    assert!(json(&["size", &fixture("llama-sharded")])["what_if"].is_null());
}

#[test]
fn what_if_bad_values() {
    fails(
        &["size", &fixture("gpt2-tied"), "--dtype", "i32"],
        "--dtype `i32` is not a floating-point dtype",
    );
    // --hidden 2: the product overflows; --hidden 1: it fits in 64 bits,
    // the model's total does not.
    for hidden in ["2", "1"] {
        fails(
            &[
                "size",
                &fixture("gpt2-tied"),
                "--vocab",
                "18446744073709551615",
                "--hidden",
                hidden,
            ],
            "overflows",
        );
    }
}

#[test]
fn encoder_without_head_has_nothing_to_tie() {
    let v = json(&["size", &fixture("bert")]);
    assert_eq!(v["tie_status"], "no-head");
    assert!(v["tying"].is_null());
    assert_eq!(v["head_params"], 0);
}
