//! Timings of a neighbour query on a quantized GGUF `token_embd`, next to
//! the two costs it cannot avoid: a plain streaming read of the tensor's
//! bytes, and their dequantization alone (into a per-thread f32 buffer of
//! the size the search uses; the first value of each block is kept so the
//! work is not optimized away; no arithmetic against queries). One
//! operation per process; `benches/gguf.sh` repeats and takes medians.
//!
//! ```text
//! gguf read FILE       sum the tensor's bytes (as u64 words) on all cores
//! gguf dequant FILE    dequantize every row block by block on all cores
//! gguf topk FILE NQ    top-10 cosine for NQ queries (rows 0..NQ)
//! ```

use std::time::Instant;

use embscope::checkpoint::Checkpoint;
use embscope::matrix::Matrix;
use embscope::progress::Progress;
use embscope::search::{self, Metric};
use rayon::prelude::*;

mod common;
use common::{read, rss_anon};

/// Raw bytes per block of rows, as the search's f32 kernels use.
const BLOCK_BYTES: usize = 256 * 1024;

fn main() {
    let args = common::args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (op, path, rest) = match args[..] {
        [op, path, ref rest @ ..] => (op, path, rest),
        _ => usage(),
    };
    let ckpt = Checkpoint::open(path, "main").unwrap_or_else(|e| panic!("{e}"));
    let t = ckpt.tensor("token_embd.weight").expect("token_embd.weight");
    let m = ckpt.matrix(t).expect("matrix");
    let start = Instant::now();
    let what = match (op, rest) {
        ("read", []) => format!("sum={}", read(m.bytes())),
        ("dequant", []) => format!("sum={}", dequant(&m)),
        ("topk", [nq]) => topk(&m, nq.parse().expect("NQ")),
        _ => usage(),
    };
    let ms = start.elapsed().as_secs_f64() * 1e3;
    println!(
        "{} ms={ms:.2} rss_anon_kb={} # {} {what}",
        args[..1]
            .iter()
            .chain(rest)
            .copied()
            .collect::<Vec<_>>()
            .join(" "),
        rss_anon(),
        m.dtype()
    );
}

fn usage() -> ! {
    eprintln!("usage: gguf (read|dequant) FILE | gguf topk FILE NQ");
    std::process::exit(2)
}

/// Dequantization alone: every block of rows into a reused f32 buffer.
fn dequant(m: &Matrix) -> f64 {
    let block = (BLOCK_BYTES / m.row_len_bytes()).max(1);
    let blocks = m.rows().div_ceil(block);
    (0..blocks)
        .into_par_iter()
        .fold(
            || (Vec::new(), 0f64),
            |(mut buf, sum): (Vec<f32>, f64), b| {
                let rows = b * block..((b + 1) * block).min(m.rows());
                buf.resize(rows.len() * m.cols(), 0.0);
                m.block_into(rows, &mut buf);
                let s = sum + f64::from(buf[0]);
                (buf, s)
            },
        )
        .map(|(_, s)| s)
        .sum()
}

fn topk(m: &Matrix, nq: usize) -> String {
    let queries: Vec<Vec<f32>> = (0..nq).map(|i| m.row(i)).collect();
    let found =
        search::top_k(m, &queries, 10, Metric::Cosine, None, &Progress::hidden()).expect("search");
    let hits = &found.lists[0];
    format!(
        "{:?} kernel={}",
        &hits[..3.min(hits.len())],
        found.kernel.name
    )
}
