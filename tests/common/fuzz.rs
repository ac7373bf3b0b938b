//! What the mutation fuzzers share: a seeded generator, the settings of
//! their long runs, catching a panic with its message, keeping the input
//! that caused it, and the commands run in-process on a mutated model.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use embscope::checkpoint::Checkpoint;
use embscope::cmd::check::{Check, ValuePass};
use embscope::cmd::lookup::{self, Query};
use embscope::cmd::size::Scenario;
use embscope::cmd::tensors::SortBy;
use embscope::cmd::undertrained::{self, ReferenceSpec, Request};
use embscope::cmd::{info, size, tensors};
use embscope::progress::Progress;
use embscope::render::{self, Human, Style};
use embscope::roles::{Roles, Which};
use embscope::vocab::{Preview, Vocab};
use tempfile::TempDir;

use super::{copy_files, embscope, fixtures};

/// SplitMix64, as in the fixture generator.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// One item of a non-empty slice.
    pub fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())].clone()
    }
}

/// The unsigned integer in the environment variable `name`, else `default`
/// (`EMBSCOPE_FUZZ_SECS`, `EMBSCOPE_FUZZ_SEED` of the long runs).
pub fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// A copy of the fixture directory `rel` to write mutants into: in memory
/// (`/dev/shm`) where there is one, since the files are rewritten
/// thousands of times a second, else in the temporary directory.
pub fn scratch_copy(rel: &str) -> TempDir {
    let tmp = tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap();
    copy_files(&fixtures().join(rel), tmp.path());
    tmp
}

/// Bytes that mean something to a JSON reader, UTF-8 lead and
/// continuation bytes, and escapes, good or broken.
const SIGNIFICANT: &[&[u8]] = &[
    b"\"",
    b"\\",
    b"[",
    b"]",
    b"{",
    b"}",
    b",",
    b":",
    b"0",
    b"7",
    b"-",
    b" ",
    b"\n",
    b"\t",
    b"e",
    b".",
    b"\xC4\x80",
    b"\xC4",
    b"\x80",
    b"\xF0",
    b"\xF0\x9F\x98",
    b"\xED\xA0\x80",
    b"\xFF",
    b"\\u",
    b"\\u0120",
    b"\\ud800",
    b"\\udc00",
    b"\\\"",
    b"\\x",
    b"\x00",
    b"\x1f",
];

/// What a number in the file may be rewritten to.
const NUMBERS: &[&str] = &[
    "4294967295",
    "4294967296",
    "16777216",
    "16777215",
    "-1",
    "1e9",
    "0",
    "00",
    "1.5",
    "-0",
    "18446744073709551616",
    "99999999999999999999999",
];

/// The line holding `b[i]`, its newline included.
fn line_at(b: &[u8], i: usize) -> std::ops::Range<usize> {
    let start = b[..i]
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |p| p + 1);
    let end = b[i..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(b.len(), |p| i + p + 1);
    start..end
}

/// One random mutation of the JSON text `b`: bits flipped, a byte
/// replaced by or a piece inserted of [`SIGNIFICANT`], bytes deleted, the
/// text cut short, a line duplicated or deleted, a number rewritten (see
/// [`NUMBERS`]), a span copied elsewhere.
pub fn mutate_json(rng: &mut Rng, b: &mut Vec<u8>) {
    if b.is_empty() {
        b.extend_from_slice(rng.pick(SIGNIFICANT));
        return;
    }
    let i = rng.below(b.len());
    match rng.below(9) {
        0 => {
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(b.len());
                b[at] ^= 1 << rng.below(8);
            }
        }
        1 => {
            let piece = rng.pick(SIGNIFICANT);
            b.splice(i..i + 1, piece.to_vec());
        }
        2 => {
            let piece = rng.pick(SIGNIFICANT);
            b.splice(i..i, piece.to_vec());
        }
        3 => {
            let n = (1 + rng.below(4)).min(b.len() - i);
            b.drain(i..i + n);
        }
        4 => b.truncate(i),
        5 => {
            let line = b[line_at(b, i)].to_vec();
            let at = line_at(b, rng.below(b.len())).start;
            b.splice(at..at, line);
        }
        6 => {
            b.drain(line_at(b, i));
        }
        7 => {
            // The number at or after `i` (else the first one), sign included.
            let Some(start) = (b[i..].iter().position(u8::is_ascii_digit).map(|p| i + p))
                .or_else(|| b.iter().position(u8::is_ascii_digit))
            else {
                return;
            };
            let start = if start > 0 && b[start - 1] == b'-' {
                start - 1
            } else {
                start
            };
            let len = b[start + 1..]
                .iter()
                .take_while(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E'))
                .count();
            let number = rng.pick(NUMBERS).as_bytes();
            b.splice(start..start + 1 + len, number.iter().copied());
        }
        _ => {
            let from = rng.below(b.len());
            let span = b[from..(from + 1 + rng.below(64)).min(b.len())].to_vec();
            b.splice(i..i, span);
        }
    }
}

/// Runs `f`; a panic comes back as its message.
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| message(payload.as_ref()))
}

/// The message a panic was raised with.
fn message(payload: &(dyn Any + Send)) -> String {
    match (
        payload.downcast_ref::<&str>(),
        payload.downcast_ref::<String>(),
    ) {
        (Some(s), _) => s.to_string(),
        (_, Some(s)) => s.clone(),
        _ => "a panic without a message".to_string(),
    }
}

/// What a fuzzer reports when mutant `count` of `name` (seed `seed`)
/// panicked with `msg`, its input kept at `kept` (see [`keep`]).
pub fn panic_report(seed: u64, count: u64, name: &str, msg: &str, kept: &Path) -> String {
    format!(
        "mutant {count} of {name} (seed {seed}): {msg}; kept at {}",
        kept.display()
    )
}

/// Copies the input that made `fuzzer` panic (a file, or a directory's
/// files) to `embscope-fuzz-FUZZER-seed-SEED-COUNT` in the temporary
/// directory (`/tmp`), to reproduce it with; returns where.
pub fn keep(fuzzer: &str, seed: u64, count: u64, input: &Path) -> PathBuf {
    let to = kept_at(fuzzer, seed, count);
    let copy = |from: &Path, to: &Path| std::fs::copy(from, to).map(drop);
    let kept = if input.is_dir() {
        std::fs::create_dir_all(&to).and_then(|()| {
            for e in std::fs::read_dir(input)? {
                let p = e?.path();
                copy(&p, &to.join(p.file_name().unwrap_or_default()))?;
            }
            Ok(())
        })
    } else {
        copy(input, &to)
    };
    if let Err(err) = kept {
        eprintln!("cannot keep {} at {}: {err}", input.display(), to.display());
    }
    to
}

/// Writes the `bytes` that made `fuzzer` panic where [`keep`] keeps its
/// inputs; returns where.
pub fn keep_bytes(fuzzer: &str, seed: u64, count: u64, bytes: &[u8]) -> PathBuf {
    let to = kept_at(fuzzer, seed, count);
    if let Err(err) = std::fs::write(&to, bytes) {
        eprintln!("cannot keep the input at {}: {err}", to.display());
    }
    to
}

/// `embscope-fuzz-FUZZER-seed-SEED-COUNT` in the temporary directory.
fn kept_at(fuzzer: &str, seed: u64, count: u64) -> PathBuf {
    std::env::temp_dir().join(format!("embscope-fuzz-{fuzzer}-seed-{seed}-{count}"))
}

/// What the commands read of `model` (a directory or file) and print,
/// in-process: `tensors`, `size`, `info`, `lookup` of a few ids in both
/// matrices, `check` (its header findings and value pass) and
/// `undertrained` with the reachability test, each report as JSON and as
/// text. Errors are answers too; only a panic is a failure.
pub fn commands(model: &Path) -> embscope::Result<()> {
    let model = model.display().to_string();
    let ckpt = Checkpoint::open(&model, "main")?;
    show(&tensors::run(&ckpt, None, SortBy::Name)?);
    let mut roles = Roles::resolve(&ckpt);
    show(&size::run(&ckpt, &roles, &Scenario::default())?);
    roles.compare_head(&ckpt);
    let config = ckpt.config.as_ref().map(|c| &c.raw);
    let vocab = Vocab::load(&ckpt.sources.dir, config)?;
    show(&info::run(&ckpt, &roles, vocab.as_ref()));
    for which in [Which::Embed, Which::Head] {
        for id in [0, 1, 340, u64::from(u32::MAX) + 1] {
            let query = Query::Ids(vec![(id, id)]);
            if let Ok(report) = lookup::run(&ckpt, &roles, vocab.as_ref(), which, &query) {
                let _ = render::json(&report);
            }
        }
    }

    let pass = ValuePass::new(&ckpt, &roles);
    pass.set_vocab(vocab.as_ref());
    let check = Check::start(&ckpt, &roles, vocab.as_ref())?;
    show(&check.finish(pass.run(&Progress::hidden())));

    let req = Request {
        top: 5,
        matrix: None,
        reference: ReferenceSpec::Auto,
        reachability: true,
        include_reference: true,
        progress: false,
    };
    let load =
        |p: &mut dyn FnMut(&Preview)| Vocab::load_previewing(&ckpt.sources.dir, config, true, p);
    show(&undertrained::run_loading(&ckpt, &roles, load, &req)?);
    Ok(())
}

/// Renders `report` both ways, as `--json` and text output would.
fn show(report: &(impl serde::Serialize + Human)) {
    let _ = render::json(report);
    let _ = report.human(&Style::plain());
}

/// The exit code of `embscope ARGS MODEL`, which must be an answer (0, 1)
/// or an error (2): not a panic (101) nor a signal.
pub fn binary_answers(args: &[&str], model: &Path) -> Result<(), String> {
    let out = embscope()
        .args(args)
        .arg(model)
        .arg("--no-progress")
        .output()
        .unwrap();
    match out.status.code() {
        Some(0..=2) => Ok(()),
        code => Err(format!(
            "`embscope {} MODEL` exited with {code:?}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim_end()
        )),
    }
}
