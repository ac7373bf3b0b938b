//! What the benchmark binaries share: their arguments, the plain
//! streaming read every figure is measured against, and the process's
//! anonymous memory.

use rayon::prelude::*;

/// The command-line arguments after the program name, without the
/// `--bench` that `cargo bench` adds.
pub fn args() -> Vec<String> {
    std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect()
}

/// The plain streaming read: a wrapping sum of the bytes taken as 64-bit
/// words, 1 MiB chunks on all cores.
pub fn read(bytes: &[u8]) -> u64 {
    let words = |c: &[u8]| {
        let (words, tail) = c.as_chunks::<8>();
        let sum = words
            .iter()
            .fold(0u64, |s, w| s.wrapping_add(u64::from_le_bytes(*w)));
        tail.iter().fold(sum, |s, &b| s.wrapping_add(u64::from(b)))
    };
    bytes
        .par_chunks(1 << 20)
        .map(words)
        .reduce(|| 0, u64::wrapping_add)
}

/// `RssAnon` of this process in kB, from `/proc/self/status` (`?` where
/// there is none).
pub fn rss_anon() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("RssAnon:")
                    .map(|v| v.trim().trim_end_matches(" kB").to_string())
            })
        })
        .unwrap_or_else(|| "?".into())
}
