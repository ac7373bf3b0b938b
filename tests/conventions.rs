//! The command line behaves like ripgrep and cargo: contradicting flags and
//! bad values are one-line usage errors, options exist only where they mean
//! something, colour follows `--color` and the environment, completions and
//! a man page are printed on demand, and small display rules hold.

use crate::common::{embscope, fails, fixture, json, text};

const LLAMA: &str = "fixtures/llama-sharded";

/// stderr of a run that exits with `code`.
fn stderr(args: &[&str], code: i32) -> String {
    let out = embscope()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    err
}

#[test]
fn lookup_output_flags_that_contradict_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let npy = dir.path().join("rows.npy").display().to_string();
    for args in [
        vec![
            "--json", "lookup", LLAMA, "--id", "1", "--format", "npy", "-o", &npy,
        ],
        vec!["--json", "lookup", LLAMA, "--id", "1", "--format", "csv"],
        vec!["--json", "lookup", LLAMA, "--id", "1", "--format", "table"],
    ] {
        fails(&args, "contradict each other");
    }
    // Before the model is looked for.
    fails(
        &[
            "--json",
            "lookup",
            "no/such-model",
            "--id",
            "1",
            "--format",
            "csv",
        ],
        "contradict each other",
    );
    let err = fails(
        &[
            "lookup",
            &fixture("llama-sharded"),
            "--id",
            "1",
            "-o",
            &npy,
            "--format",
            "csv",
        ],
        "names a .npy file but --format csv was given",
    );
    assert!(err.contains("rows.npy"), "{err}");
    assert!(
        !dir.path().join("rows.npy").exists(),
        "nothing written on a usage error"
    );
}

#[test]
fn lookup_output_format_follows_the_file_extension() {
    let dir = tempfile::tempdir().unwrap();
    let out = |name: &str| dir.path().join(name).display().to_string();
    let run = |args: &[&str]| {
        let o = embscope().args(args).output().unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(o.stdout.is_empty(), "{args:?} wrote to stdout");
    };
    let model = fixture("llama-sharded");
    for name in ["rows.npy", "rows.csv", "rows.json", "rows.txt", "both.json"] {
        let mut args = vec!["lookup", &model, "--id", "1", "2", "-o"];
        let path = out(name);
        args.push(&path);
        if name == "both.json" {
            args.insert(0, "--json");
        }
        run(&args);
    }
    let npy = std::fs::read(out("rows.npy")).unwrap();
    assert!(npy.starts_with(b"\x93NUMPY"), "not .npy: {:?}", &npy[..8]);
    let csv = std::fs::read_to_string(out("rows.csv")).unwrap();
    assert!(csv.starts_with("id,token,norm,v0,"), "{csv}");
    assert_eq!(csv.lines().count(), 3);
    for name in ["rows.json", "both.json"] {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out(name)).unwrap()).unwrap();
        assert_eq!(v["rows"][1]["id"], 2, "{name}");
    }
    let table = std::fs::read_to_string(out("rows.txt")).unwrap();
    assert!(table.starts_with("id"), "{table}");
    assert!(
        table.contains("2 rows of `model.embed_tokens.weight`"),
        "{table}"
    );
}

#[test]
fn sizes_and_counts_refuse_zero_and_negative() {
    for (flag, value) in [
        ("--vocab", "0"),
        ("--hidden", "0"),
        ("--vocab", "-5"),
        ("--hidden", "-1"),
    ] {
        let err = fails(&["size", LLAMA, flag, value], "must be at least 1");
        assert!(err.contains(flag), "{err}");
        assert!(!err.contains("-- "), "wrong tip: {err}");
    }
    for value in ["0", "-1"] {
        let err = fails(
            &["neighbors", LLAMA, "Paris", "-k", value],
            "for '--top <N>': must be at least 1",
        );
        assert!(!err.contains("-- "), "wrong tip: {err}");
    }
}

#[test]
fn parse_errors_are_one_line_with_a_fitting_hint() {
    let err = fails(
        &["lookup", LLAMA, "--id", "-1"],
        "invalid value '-1' for '--id <N>...': ids are non-negative integers",
    );
    assert!(!err.contains("-- -1"), "wrong tip: {err}");
    assert!(err.contains("see `embscope lookup --help`"), "{err}");
    fails(
        &["info"],
        "the following required arguments were not provided: <MODEL>",
    );
    fails(
        &["lookup", LLAMA, "--id", "1", "--fulll"],
        "a similar argument exists: '--full'",
    );
    fails(&["frobnicate"], "unrecognized subcommand 'frobnicate'");
    // Help and version are not errors.
    let help = text(&["lookup", "--help"], 0);
    assert!(help.lines().count() > 10, "{help}");
    assert!(text(&["--version"], 0).starts_with("embscope "));
}

#[test]
fn a_model_after_its_queries_is_pointed_out() {
    let err = fails(
        &["neighbors", "king", LLAMA],
        "MODEL comes first: embscope neighbors MODEL QUERY...",
    );
    assert!(err.contains("`king` is not a model"), "{err}");
    // Neither argument a path: the plain not-found error.
    fails(
        &["neighbors", "king", "queen"],
        "`king` is not a path, not in the Hugging Face cache",
    );
}

#[test]
fn options_exist_only_where_they_mean_something() {
    for cmd in ["info", "size", "check", "tensors"] {
        fails(
            &[cmd, LLAMA, "--matrix", "head"],
            "unexpected argument '--matrix' found",
        );
    }
    let help = text(&["neighbors", "--help"], 0);
    assert!(help.contains("Global options:"), "{help}");
    assert!(help.contains("-k, --top <N>"), "{help}");
    let top = json(&["neighbors", &fixture("llama-sharded"), "#2", "--top", "3"]);
    let k = json(&["neighbors", &fixture("llama-sharded"), "#2", "--k", "3"]);
    assert_eq!(top["queries"][0]["results"].as_array().unwrap().len(), 3);
    assert_eq!(top, k, "--k stays an alias of --top");
    let err = stderr(&["--revision", "v1", "info", LLAMA], 0);
    assert_eq!(
        err,
        format!("note: --revision applies to Hub ids only; ignored for {LLAMA}\n")
    );
    assert_eq!(stderr(&["-q", "--revision", "v1", "info", LLAMA], 0), "");
}

#[test]
fn color_follows_the_flag_then_the_environment() {
    let esc = |flags: &[&str], env: &[(&str, &str)]| {
        let mut c = embscope();
        c.env_remove("NO_COLOR")
            .env_remove("CLICOLOR")
            .env_remove("CLICOLOR_FORCE");
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c
            .args(flags)
            .args(["info", &fixture("llama-sharded")])
            .output()
            .unwrap();
        assert!(out.status.success());
        out.stdout.contains(&0x1b)
    };
    // stdout is a pipe here: `auto` colours only when forced.
    assert!(!esc(&[], &[]));
    assert!(esc(&[], &[("CLICOLOR_FORCE", "1")]));
    assert!(!esc(&[], &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]));
    assert!(esc(&["--color", "always"], &[("NO_COLOR", "1")]));
    assert!(esc(&["--color=always"], &[("CLICOLOR", "0")]));
    assert!(!esc(&["--color", "never"], &[("CLICOLOR_FORCE", "1")]));
    fails(
        &["--color", "sometimes", "info", LLAMA],
        "invalid value 'sometimes' for '--color <WHEN>'",
    );
}

#[test]
fn completions_and_man_page() {
    let bash = text(&["completions", "bash"], 0);
    assert!(
        bash.contains("neighbors") && bash.contains("--top"),
        "{bash}"
    );
    for shell in ["zsh", "fish", "powershell", "elvish"] {
        assert!(
            text(&["completions", shell], 0).contains("lookup"),
            "{shell}"
        );
    }
    fails(&["completions", "tcsh"], "invalid value 'tcsh'");
    let man = text(&["man"], 0);
    // roff: a string definition or two, then the title line.
    let title = man
        .lines()
        .find(|l| !l.starts_with(".ie") && !l.starts_with(".el"));
    assert!(
        title.is_some_and(|l| l.starts_with(".TH embscope 1 ")),
        "{}",
        &man[..200]
    );
    assert!(man.contains("completions") && man.contains("neighbors"));
}

#[test]
fn the_man_page_is_one_page_with_exit_status_and_environment() {
    let man = text(&["man"], 0);
    // Every command in this page, with its options; none sent to a page of
    // its own that nothing installs.
    for cmd in [
        "info",
        "tensors",
        "size",
        "lookup",
        "neighbors",
        "check",
        "undertrained",
    ] {
        assert!(man.contains(&format!(".SS \"embscope {cmd}\"")), "{cmd}");
        assert!(!man.contains(&format!("embscope\\-{cmd}")), "{cmd}");
    }
    assert!(!man.contains("(1)"), "a reference to another page");
    let section = |name: &str| {
        let start = man
            .find(&format!(".SH {name}\n"))
            .or_else(|| man.find(&format!(".SH \"{name}\"\n")))
            .unwrap_or_else(|| panic!("no {name} section"));
        let rest = &man[start + 4..];
        rest[..rest.find("\n.SH ").unwrap_or(rest.len())].to_string()
    };
    let commands = section("COMMANDS");
    assert!(commands.contains("\\-\\-top"), "neighbors' options");
    let exit = section("EXIT STATUS");
    for code in ["0", "1", "2"] {
        assert!(exit.contains(&format!("\\fB{code}\\fR")), "{exit}");
    }
    // Every variable the code reads is documented: those listed here, and
    // any a `var("…")` or `var_os("…")` of src/ names.
    let environment = section("ENVIRONMENT");
    let mut names: Vec<String> = [
        "NO_COLOR",
        "CLICOLOR",
        "CLICOLOR_FORCE",
        "HF_HUB_CACHE",
        "HF_HOME",
        "OLLAMA_MODELS",
        "EMBSCOPE_KERNEL",
        "EMBSCOPE_CPU_MASK",
    ]
    .map(String::from)
    .to_vec();
    names.extend(variables_read(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src"
    ))));
    for name in names.iter().filter(|n| *n != "HOME") {
        assert!(
            environment.contains(&format!("\\fB{name}\\fR")),
            "{name} is read but not in ENVIRONMENT"
        );
    }
    assert!(names.iter().any(|n| n == "XDG_CACHE_HOME"), "{names:?}");
}

/// The names in `var("NAME")` and `var_os("NAME")` calls of the Rust files
/// under `dir`, outside their tests.
fn variables_read(dir: &std::path::Path) -> Vec<String> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            names.extend(variables_read(&path));
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") || path.ends_with("tests.rs") {
            continue;
        }
        // What the tests read is not the tool's environment.
        let code = std::fs::read_to_string(&path).unwrap();
        let code = code.split("#[cfg(test)]").next().unwrap_or_default();
        for call in ["var(\"", "var_os(\""] {
            for (at, _) in code.match_indices(call) {
                let rest = &code[at + call.len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                if !name.is_empty() && rest[name.len()..].starts_with('"') {
                    names.push(name);
                }
            }
        }
    }
    names
}

#[test]
fn units_plurals_and_labels() {
    // 1,050,644,672 bytes (once "1002.0 MiB"): one unit rule, three digits.
    let size = text(&["size", LLAMA, "--vocab", "4104000", "--hidden", "64"], 0);
    assert!(
        size.contains("total 525,322,336 params, 0.98 GiB\n"),
        "{size}"
    );
    assert!(
        size.contains("change +525,290,176 params, +0.98 GiB\n"),
        "{size}"
    );
    let lone = "fixtures/dtypes/f32.safetensors";
    let tensors = text(&["tensors", lone], 0);
    assert!(
        tensors.ends_with("1 tensor, 16 parameters, 64 B\n"),
        "{tensors}"
    );
    let info = text(&["info", lone], 0);
    assert!(
        info.contains("f32.safetensors  184 B, 1 tensor  file\n"),
        "{info}"
    );
    let sharded = text(&["info", LLAMA], 0);
    assert!(sharded.contains("tensors  shard\n"), "{sharded}");
    let lookup = text(&["lookup", lone, "--id", "1", "2"], 0);
    let header: Vec<&str> = lookup.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["id", "norm", "values"], "{lookup}");
    assert!(!lookup.contains('?'), "{lookup}");
    assert!(
        lookup.ends_with("2 rows of `embed_tokens.weight` (F32, 4 × 4); no tokenizer\n"),
        "{lookup}"
    );
    let err = fails(
        &["lookup", &fixture("bert"), "--id", "1", "--matrix", "head"],
        "has no output head",
    );
    assert!(!err.contains("no head"), "{err}");
}

#[test]
fn tensors_sort_in_natural_order() {
    let dir = tempfile::tempdir().unwrap();
    let names = ["layers.10.w", "layers.2.w", "layers.1.w", "embed.weight"];
    let header = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            format!(
                r#""{n}":{{"dtype":"F32","shape":[1],"data_offsets":[{},{}]}}"#,
                4 * i,
                4 * i + 4
            )
        })
        .collect::<Vec<_>>()
        .join(",");
    let mut header = format!("{{{header}}}").into_bytes();
    header.resize(header.len().next_multiple_of(8), b' ');
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend(header);
    file.extend([0u8; 16]);
    let path = dir.path().join("model.safetensors");
    std::fs::write(&path, file).unwrap();
    let report = json(&["tensors", &path.display().to_string()]);
    let order: Vec<&str> = report["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        order,
        ["embed.weight", "layers.1.w", "layers.2.w", "layers.10.w"]
    );
}

#[test]
fn tensors_filter_matching_nothing_says_so_and_exits_1() {
    let err = stderr(&["tensors", LLAMA, "--filter", "*nothing*"], 1);
    assert_eq!(
        err,
        "embscope: no tensor matches \"*nothing*\" (12 tensors)\n"
    );
    assert_eq!(
        stderr(&["-q", "tensors", LLAMA, "--filter", "*nothing*"], 1),
        ""
    );
    let quiet = embscope()
        .args(["tensors", LLAMA, "--filter", "*nothing*"])
        .output()
        .unwrap();
    assert!(quiet.stdout.is_empty(), "no empty table on stdout");
    let out = embscope()
        .args([
            "--json",
            "tensors",
            &fixture("llama-sharded"),
            "--filter",
            "x",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["count"].as_u64(), v["total"].as_u64()),
        (Some(0), Some(12))
    );
    assert!(text(&["tensors", LLAMA, "--filter", "*embed*"], 0).contains("1 tensor,"));
}
