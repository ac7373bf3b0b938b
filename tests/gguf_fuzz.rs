//! Deterministic mutation fuzzing of the GGUF reader: byte flips, small
//! integer rewrites, length fields blown up, truncations and insertions,
//! applied to every GGUF fixture. Opening (candle's reader behind our
//! guards), the config and the vocabulary from metadata, encoding a text
//! with that vocabulary and a quantized row read must return an answer or
//! an error, never panic. `fuzz_gguf_for_minutes` (ignored;
//! `benches/fuzz.sh gguf`) runs the same for `EMBSCOPE_FUZZ_SECS` seconds,
//! and keeps a file that panicked in the temporary directory.

use std::path::Path;
use std::time::{Duration, Instant};

use embscope::checkpoint::{gguf, gguf_config};
use embscope::matrix::Matrix;
use embscope::vocab::Vocab;

use crate::common::fixtures;
use crate::common::fuzz::{Rng, catch, env_or, keep_bytes, panic_report};

/// Every `.gguf` below `fixtures/gguf`, with its bytes.
fn corpus() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut dirs = vec![fixtures().join("gguf")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                out.push((p.display().to_string(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    assert!(out.len() >= 10, "GGUF fixtures missing");
    out
}

/// One random mutation of `bytes`, mostly within the header (the first
/// 16 KiB hold every fixture's metadata and tensor infos).
fn mutate(rng: &mut Rng, bytes: &mut Vec<u8>) {
    let head = bytes.len().min(16 * 1024);
    if head < 8 {
        bytes.push(rng.next() as u8);
        return;
    }
    match rng.below(6) {
        0 => {
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(head);
                bytes[i] ^= 1 << rng.below(8);
            }
        }
        1 => {
            let i = rng.below(head.saturating_sub(4));
            let v = rng.below(40) as u32;
            bytes[i..i + 4].copy_from_slice(&v.to_le_bytes());
        }
        2 => {
            let i = rng.below(head.saturating_sub(8));
            let blow = [
                u64::MAX,
                1 << 63,
                1 << 40,
                1 << 32,
                0xFFFF_FFFF,
                1 << 30,
                rng.next(),
            ];
            let v = blow[rng.below(blow.len())];
            bytes[i..i + 8].copy_from_slice(&v.to_le_bytes());
        }
        3 => {
            let n = rng.below(bytes.len());
            bytes.truncate(n);
        }
        4 => {
            let i = rng.below(head);
            let n = 1 + rng.below(16);
            let junk: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
            bytes.splice(i..i, junk);
        }
        _ => {
            let i = rng.below(head);
            let n = rng.below(16).min(bytes.len() - i);
            bytes.drain(i..i + n);
        }
    }
}

/// Opens `bytes` as the library does; any outcome but a panic is fine.
/// Returns whether the file opened.
fn open(bytes: &[u8]) -> bool {
    let path = Path::new("fuzz.gguf");
    let Ok(g) = gguf::read(path, bytes) else {
        return false;
    };
    let _ = gguf_config::from_metadata(path, &g.metadata);
    if let Ok(Some(vocab)) = Vocab::from_gguf(path, &g.metadata) {
        let _ = vocab.encode("Hello king, 1234\n", true);
    }
    for t in &g.tensors {
        if let Ok(m) = Matrix::new(&t.name, &bytes[t.start..t.end], t.dtype, &t.shape)
            && m.rows() > 0
        {
            let _ = m.row(0);
            let _ = m.row(m.rows() - 1);
        }
    }
    true
}

/// Runs mutations until `done(count)`; returns (count, files that still
/// opened, first panic).
fn run(seed: u64, done: impl Fn(u64) -> bool) -> (u64, u64, Option<String>) {
    let corpus = corpus();
    let mut rng = Rng(seed);
    let (mut count, mut opened) = (0, 0);
    while !done(count) {
        let (name, original) = &corpus[rng.below(corpus.len())];
        let mut bytes = original.clone();
        for _ in 0..1 + rng.below(3) {
            mutate(&mut rng, &mut bytes);
        }
        count += 1;
        match catch(|| open(&bytes)) {
            Ok(ok) => opened += u64::from(ok),
            Err(msg) => {
                let kept = keep_bytes("gguf", seed, count, &bytes);
                return (
                    count,
                    opened,
                    Some(panic_report(seed, count, name, &msg, &kept)),
                );
            }
        }
    }
    (count, opened, None)
}

#[test]
fn mutated_gguf_files_never_panic() {
    let (count, opened, panic) = run(11, |n| n >= 3000);
    assert_eq!(panic, None);
    assert_eq!(count, 3000);
    // Both outcomes are exercised: many mutants still open, many do not.
    assert!((300..2700).contains(&opened), "{opened} of 3000 opened");
}

#[test]
#[ignore = "minutes of fuzzing: benches/fuzz.sh gguf"]
fn fuzz_gguf_for_minutes() {
    let secs = env_or("EMBSCOPE_FUZZ_SECS", 180);
    let seed = env_or("EMBSCOPE_FUZZ_SEED", 12345);
    let until = Instant::now() + Duration::from_secs(secs);
    let (count, opened, panic) = run(seed, |_| Instant::now() >= until);
    eprintln!(
        "fuzz-gguf: {count} mutated files ({opened} still opened), seed {seed}, {secs} s, panics: {panic:?}"
    );
    assert_eq!(panic, None);
}
