//! Search kernels: every kernel this CPU has gives byte-identical answers
//! (the shortlist is re-scored exactly), `--json` and `-v` say which one
//! ran and why, and `EMBSCOPE_KERNEL` / `EMBSCOPE_CPU_MASK` values that
//! cannot be honoured are errors naming the kernels available. And the
//! row loops of `undertrained` and `check` give the same answers on
//! AVX-512 and on AVX2.
//!
//! A test that needs a kernel this CPU lacks says so on stderr (see
//! [`covers`]), and fails instead when `EMBSCOPE_REQUIRE_KERNELS` names it.

use serde_json::Value;

use crate::common::{embscope, fixture, ids};

/// Runs `embscope --json ARGS` with `env`, expects success, parses stdout.
fn json_with(env: &[(&str, &str)], args: &[&str]) -> Value {
    let out = embscope()
        .envs(env.iter().copied())
        .arg("--json")
        .args(args)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{env:?} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

/// Runs with `env`, expects exit 2 and one line on stderr; returns it.
fn error_with(env: &[(&str, &str)], args: &[&str]) -> String {
    let out = embscope()
        .envs(env.iter().copied())
        .args(args)
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{env:?} {args:?}: {err}");
    assert!(out.stdout.is_empty());
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    err.trim_end().to_string()
}

/// The kernels this CPU runs for the matrix of `model`, as the error for an
/// unknown kernel lists them.
fn available(model: &str) -> Vec<String> {
    available_masked(model, None)
}

/// The kernels offered with `EMBSCOPE_CPU_MASK=mask` (the test's own mask
/// replaces any the environment has).
fn available_masked(model: &str, mask: Option<&str>) -> Vec<String> {
    let mut env = vec![("EMBSCOPE_KERNEL", "bogus")];
    env.extend(mask.map(|m| ("EMBSCOPE_CPU_MASK", m)));
    let err = error_with(&env, &["neighbors", &fixture(model), "#1"]);
    let list = err
        .rsplit_once(": ")
        .and_then(|(_, l)| l.strip_suffix(')'))
        .unwrap_or_else(|| panic!("no list in {err:?}"));
    list.split(", ").map(String::from).collect()
}

/// Forcing `kernel` (also the name of the feature it needs) while
/// `EMBSCOPE_CPU_MASK` hides it fails on every CPU, naming the kernels the
/// mask leaves, which do not include it.
fn forcing_a_masked_kernel_is_an_error(kernel: &str) {
    let err = error_with(
        &[("EMBSCOPE_KERNEL", kernel), ("EMBSCOPE_CPU_MASK", kernel)],
        &["neighbors", &fixture("llama-sharded"), "#7"],
    );
    let rest = available_masked("llama-sharded", Some(kernel));
    assert!(!rest.iter().any(|k| k == kernel), "{rest:?}");
    assert_eq!(
        err,
        format!(
            "embscope: EMBSCOPE_KERNEL={kernel} is not available on this CPU for BF16 (available: {})",
            rest.join(", ")
        )
    );
}

/// Every kernel name, as `EMBSCOPE_KERNEL` and `EMBSCOPE_REQUIRE_KERNELS`
/// spell them.
const KERNELS: [&str; 6] = [
    "portable",
    "avx2",
    "avx512",
    "avx512bf16",
    "avx512vnni",
    "amx",
];

/// Whether this CPU runs `kernel`, of those `offered` for a BF16 matrix
/// (see [`available`]). A kernel it lacks is a skip, printed, or a failure
/// when `EMBSCOPE_REQUIRE_KERNELS` names it; a name there that is not a
/// kernel fails too.
fn covers(kernel: &str, offered: &[String]) -> bool {
    let required = std::env::var("EMBSCOPE_REQUIRE_KERNELS").unwrap_or_default();
    for name in required.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        assert!(
            KERNELS.contains(&name),
            "EMBSCOPE_REQUIRE_KERNELS={required}: `{name}` is not a kernel (kernels: {})",
            KERNELS.join(", ")
        );
        assert!(
            name != kernel || offered.iter().any(|k| k == kernel),
            "EMBSCOPE_REQUIRE_KERNELS names {kernel}, which this CPU does not run \
             (or EMBSCOPE_CPU_MASK hides): a test of it would be skipped"
        );
    }
    let runs = offered.iter().any(|k| k == kernel);
    if !runs {
        eprintln!("skipped: {kernel} is not on this CPU");
    }
    runs
}

const QUERIES: [&str; 6] = [
    "#7",
    "#285",
    "Paris",
    "king - man + woman",
    "#3 + #100 - #200",
    "#0",
];

#[test]
fn every_kernel_gives_byte_identical_json() {
    for model in ["llama-sharded", "gpt2-tied", "qwen-f16-tied"] {
        let path = fixture(model);
        let kernels = available(model);
        assert!(kernels.iter().any(|k| k == "portable"), "{kernels:?}");
        if model == "llama-sharded" {
            // A BF16 matrix: every kernel this CPU has is offered.
            for kernel in KERNELS {
                covers(kernel, &kernels);
            }
        }
        for metric in ["cosine", "dot"] {
            let mut args = vec!["neighbors", path.as_str(), "-k", "12", "--metric", metric];
            args.extend(QUERIES);
            let mut first: Option<(&str, String)> = None;
            for name in &kernels {
                let mut v = json_with(&[("EMBSCOPE_KERNEL", name)], &args);
                let kernel = v.as_object_mut().unwrap().remove("kernel").unwrap();
                assert_eq!(kernel["name"], name.as_str(), "{model}");
                assert_eq!(kernel["reason"], "forced by EMBSCOPE_KERNEL");
                let text = serde_json::to_string_pretty(&v).unwrap();
                match &first {
                    None => first = Some((name, text)),
                    Some((other, want)) => {
                        assert_eq!(&text, want, "{model} {metric}: {name} vs {other}")
                    }
                }
            }
        }
    }
}

#[test]
fn json_and_verbose_say_which_kernel_ran_and_why() {
    let model = fixture("llama-sharded");
    let v = json_with(&[], &["neighbors", &model, "#7"]);
    let name = v["kernel"]["name"].as_str().unwrap();
    assert!(
        available("llama-sharded").iter().any(|k| k == name),
        "{name}"
    );
    // One query on a BF16 matrix: the kernels' table settles it without a
    // trial (a CPU without AVX2 has only the portable kernel).
    let reason = v["kernel"]["reason"].as_str().unwrap();
    assert!(
        [
            "the fastest path this CPU has for BF16 at 1 query",
            "the widest path this CPU has for BF16",
        ]
        .contains(&reason),
        "{reason}"
    );
    let out = embscope()
        .args(["neighbors", &model, "#7", "-v", "--no-progress"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("kernel: ")).collect();
    assert_eq!(lines, [format!("kernel: {name} ({reason})")]);
    let quiet = embscope()
        .args(["neighbors", &model, "#7", "-v", "-q"])
        .output()
        .unwrap();
    assert!(quiet.stderr.is_empty());
}

#[test]
fn masked_features_leave_the_portable_kernel() {
    let v = json_with(
        &[("EMBSCOPE_CPU_MASK", "avx2,avx512")],
        &["neighbors", &fixture("llama-sharded"), "#7"],
    );
    assert_eq!(v["kernel"]["name"], "portable");
    assert_eq!(
        v["kernel"]["reason"],
        "the widest path this CPU has for BF16"
    );
    let err = error_with(
        &[
            ("EMBSCOPE_CPU_MASK", "avx2,avx512"),
            ("EMBSCOPE_KERNEL", "avx512"),
        ],
        &["neighbors", &fixture("llama-sharded"), "#7"],
    );
    assert_eq!(
        err,
        "embscope: EMBSCOPE_KERNEL=avx512 is not available on this CPU for BF16 (available: portable)"
    );
}

#[test]
fn masking_avx512vnni_hides_the_int8_kernel() {
    forcing_a_masked_kernel_is_an_error("avx512vnni");
    // It reads BF16 bytes: never offered for an F32 matrix.
    assert!(!available("gpt2-tied").iter().any(|k| k == "avx512vnni"));
}

#[test]
fn a_kernel_this_cpu_lacks_or_an_unknown_one_is_an_error() {
    let model = fixture("llama-sharded");
    forcing_a_masked_kernel_is_an_error("amx");
    let err = error_with(&[("EMBSCOPE_KERNEL", "avx9")], &["neighbors", &model, "#7"]);
    assert!(
        err.starts_with("embscope: EMBSCOPE_KERNEL=avx9 is not a kernel (available on this CPU for BF16: portable"),
        "{err}"
    );
    // The BF16 kernels read BF16 bytes: not available for an F32 matrix.
    let err = error_with(
        &[("EMBSCOPE_KERNEL", "avx512bf16")],
        &["neighbors", &fixture("gpt2-tied"), "#7"],
    );
    assert!(
        err.starts_with("embscope: EMBSCOPE_KERNEL=avx512bf16 is not available on this CPU for F32 (available: portable"),
        "{err}"
    );
    let err = error_with(
        &[("EMBSCOPE_CPU_MASK", "avx512,sse9")],
        &["neighbors", &model, "#7"],
    );
    assert_eq!(
        err,
        "embscope: EMBSCOPE_CPU_MASK=avx512,sse9: `sse9` is not a feature it can hide (features: avx2, avx512, avx512bf16, amx, avx512vnni)"
    );
}

#[test]
fn a_kernel_whose_layout_does_not_fit_names_the_one_that_ran() {
    if !covers("avx512vnni", &available("llama-sharded")) {
        return; // this CPU has no int8 kernel to fall back from
    }
    // Too many columns for the int8 kernel's i32 sums (255 · 127 · cols
    // must stay below 2^31): AVX-512 BF16 runs in its place.
    let (rows, cols) = (3, 70_000);
    let data: Vec<u8> = (0..rows * cols)
        .flat_map(|i| half::bf16::from_f32(((i % 7) as f32 - 3.0) / 4.0).to_le_bytes())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.safetensors");
    let view = safetensors::tensor::TensorView::new(
        safetensors::tensor::Dtype::BF16,
        vec![rows, cols],
        &data,
    )
    .unwrap();
    safetensors::serialize_to_file(
        [("embed_tokens.weight", view)],
        None::<std::collections::HashMap<String, String>>,
        &path,
    )
    .unwrap();
    let v = json_with(
        &[("EMBSCOPE_KERNEL", "avx512vnni")],
        &["neighbors", path.to_str().unwrap(), "#0", "-k", "1"],
    );
    assert_eq!(v["kernel"]["name"], "avx512bf16");
    assert_eq!(
        v["kernel"]["reason"],
        "forced by EMBSCOPE_KERNEL; avx512vnni does not fit 70000 columns, so avx512bf16 runs"
    );
}

#[test]
fn undertrained_and_check_answer_alike_on_avx512_and_avx2() {
    // With AVX-512 hidden, the AVX2 build of the row loops runs (on a CPU
    // without AVX-512, the same build twice). Both fuse multiply-adds, so
    // the sums, and so every score, are the same to the bit (the portable
    // build, which does not fuse on x86-64, would differ in the last
    // digits of the `untrained` fixture's scores). `undertrained` reads an untied BF16
    // head with `vdpbf16ps` where the CPU has AVX512_BF16, hidden here in
    // both runs (see the next test).
    let offered = available("llama-sharded");
    covers("avx512", &offered);
    covers("avx2", &offered);
    for model in ["untrained", "llama-sharded", "qwen-f16-tied"] {
        for command in ["undertrained", "check"] {
            let args = [command, &fixture(model)];
            let avx2 = json_with(&[("EMBSCOPE_CPU_MASK", "avx512")], &args);
            let avx512 = json_with(&[("EMBSCOPE_CPU_MASK", "avx512bf16")], &args);
            assert_eq!(avx512, avx2, "{command} {model}");
            if command == "check" {
                assert_eq!(json_with(&[], &args), avx2, "{command} {model}");
            }
        }
    }
}

#[test]
fn undertrained_answers_alike_with_and_without_bf16_dot_products() {
    // The head pass with `vdpbf16ps` (on a CPU with AVX512_BF16) sums the
    // same products as the f32 loops in another order: the same ranks, and
    // every number the same to about 6 digits. (Elsewhere both runs take
    // the f32 loops.)
    covers("avx512bf16", &available("llama-sharded"));
    fn near(a: &Value, b: &Value, at: &str) {
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => {
                let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
                assert!((x - y).abs() <= 1e-5 * x.abs().max(1.0), "{at}: {x} vs {y}");
            }
            (Value::Array(x), Value::Array(y)) => {
                assert_eq!(x.len(), y.len(), "{at}");
                for (i, (x, y)) in x.iter().zip(y).enumerate() {
                    near(x, y, &format!("{at}[{i}]"));
                }
            }
            (Value::Object(x), Value::Object(y)) => {
                assert!(x.keys().eq(y.keys()), "{at}");
                for (k, x) in x {
                    near(x, &y[k], &format!("{at}.{k}"));
                }
            }
            _ => assert_eq!(a, b, "{at}"),
        }
    }
    for model in ["untrained", "llama-sharded"] {
        let args = ["undertrained", &fixture(model), "--top", "40"];
        let f32_loops = json_with(&[("EMBSCOPE_CPU_MASK", "avx512bf16")], &args);
        let default = json_with(&[], &args);
        assert_eq!(
            ids(&default["candidates"]),
            ids(&f32_loops["candidates"]),
            "{model}"
        );
        near(&default, &f32_loops, model);
    }
}

#[test]
fn a_mask_check_and_undertrained_cannot_honour_is_an_error() {
    // Running unmasked would time or test the wrong arithmetic silently.
    for command in ["check", "undertrained"] {
        let err = error_with(
            &[("EMBSCOPE_CPU_MASK", "avx512f")],
            &[command, &fixture("llama-sharded")],
        );
        assert_eq!(
            err,
            "embscope: EMBSCOPE_CPU_MASK=avx512f: `avx512f` is not a feature it can hide (features: avx2, avx512, avx512bf16, amx, avx512vnni)",
            "{command}"
        );
    }
}
