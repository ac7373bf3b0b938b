//! Timings of the hot paths on a real-sized matrix, next to a plain
//! streaming read of the same bytes. One operation per process, so the
//! figures include mapping the file; `benches/run.sh` repeats and takes
//! medians.
//!
//! ```text
//! kernel gen FILE                 write a 128256 × 4096 BF16 tensor `embed` to FILE
//! kernel read FILE TENSOR         sum the tensor's bytes (as u64 words) on all cores
//! kernel topk FILE TENSOR NQ      top-10 cosine for NQ queries (rows 0..NQ)
//! kernel scan FILE TENSOR         all-zero row count via `stream::scan`
//! ```
//!
//! Environment: `REPS=N` repeats the operation in the process (one line
//! each: operation, wall milliseconds, RssAnon in KiB; repetitions after the
//! first find the pages already mapped). `ROWS=N` keeps the first N rows, to
//! time the arithmetic on data that stays in cache. `POPULATE=1` maps with
//! `MAP_POPULATE` (page tables filled before the timed part).
//! `EMBSCOPE_KERNEL=avx512vnni|amx|avx512bf16|avx512|avx2|portable` forces a kernel;
//! `EMBSCOPE_CPU_MASK=avx512vnni,amx,avx512bf16,avx512,avx2` hides CPU features.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::time::Instant;

use embscope::dtype::Dtype;
use embscope::matrix::Matrix;
use embscope::progress::Progress;
use embscope::search::{self, Metric};
use embscope::stream;

mod common;
use common::{read, rss_anon};

const ROWS: usize = 128_256;
const COLS: usize = 4096;

fn main() {
    let args = common::args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args[..] {
        ["gen", path] => generate(path),
        [op, path, tensor, ref rest @ ..] => {
            let file = File::open(path).expect("open");
            let mut options = memmap2::MmapOptions::new();
            if std::env::var_os("POPULATE").is_some() {
                options.populate();
            }
            // SAFETY: the benchmark file is not modified while mapped.
            let map = unsafe { options.map(&file) }.expect("mmap");
            let st = safetensors::SafeTensors::deserialize(&map).expect("safetensors");
            let view = st.tensor(tensor).expect("tensor");
            let dtype = Dtype::parse(&format!("{:?}", view.dtype())).expect("dtype");
            let (mut data, mut shape) = (view.data(), view.shape().to_vec());
            if let Ok(rows) = std::env::var("ROWS") {
                shape[0] = rows.parse().expect("ROWS");
                data = &data[..shape.iter().product::<usize>() * (dtype.bits() / 8) as usize];
            }
            let m = Matrix::new(tensor, data, dtype, &shape).expect("matrix");
            let reps: usize = std::env::var("REPS").map_or(1, |r| r.parse().expect("REPS"));
            for rep in 0..reps {
                let start = Instant::now();
                let what = match (op, rest) {
                    ("read", []) => format!("sum={}", read(m.bytes())),
                    ("topk", [nq]) => topk(&m, nq.parse().expect("NQ")),
                    ("scan", []) => scan(&m),
                    _ => usage(),
                };
                let ms = start.elapsed().as_secs_f64() * 1e3;
                let name = [op]
                    .iter()
                    .chain(rest)
                    .copied()
                    .collect::<Vec<_>>()
                    .join(" ");
                let anon = rss_anon();
                println!("{name} rep={rep} ms={ms:.2} rss_anon_kb={anon} # {what}");
            }
        }
        _ => {
            usage();
        }
    }
}

fn usage() -> String {
    eprintln!(
        "usage: kernel gen FILE | kernel (read|scan) FILE TENSOR | kernel topk FILE TENSOR NQ"
    );
    std::process::exit(2)
}

fn topk(m: &Matrix, nq: usize) -> String {
    let queries: Vec<Vec<f32>> = (0..nq).map(|i| m.row(i)).collect();
    let found = search::top_k(m, &queries, 10, Metric::Cosine, None, &Progress::hidden())
        .unwrap_or_else(|e| panic!("{e}"));
    let hits = &found.lists[0];
    let first = hits[..3.min(hits.len())].to_vec();
    format!(
        "{first:?} kernel={} ({})",
        found.kernel.name, found.kernel.reason
    )
}

/// The `stream::scan` driver with the least work per block: counts the
/// rows whose stored bytes are all zero.
fn scan(m: &Matrix) -> String {
    let row_bytes = m.row_len_bytes();
    let zero = stream::scan(
        m,
        &Progress::hidden(),
        || 0usize,
        |s, _, raw| {
            *s += raw
                .chunks_exact(row_bytes)
                .filter(|row| row.iter().all(|&b| b == 0))
                .count();
        },
        |a, b| a + b,
    );
    format!("zero_rows={zero}")
}

/// Writes a safetensors file holding one `ROWS × COLS` BF16 tensor `embed`
/// of pseudo-random values with row norms that vary from row to row.
fn generate(path: &str) {
    let bytes = ROWS * COLS * 2;
    let mut header = format!(
        r#"{{"embed":{{"dtype":"BF16","shape":[{ROWS},{COLS}],"data_offsets":[0,{bytes}]}}}}"#
    );
    while header.len() % 8 != 0 {
        header.push(' ');
    }
    let mut out = BufWriter::new(File::create(path).expect("create"));
    out.write_all(&(header.len() as u64).to_le_bytes()).unwrap();
    out.write_all(header.as_bytes()).unwrap();
    let mut s = 0x2545_F491_4F6C_DD1Du64;
    let mut row = vec![0u8; COLS * 2];
    for r in 0..ROWS {
        let scale = 0.02 * (1.0 + (r % 13) as f32 / 6.0);
        for c in row.chunks_exact_mut(2) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let u = (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0;
            c.copy_from_slice(&half::bf16::from_f32(u * scale).to_le_bytes());
        }
        out.write_all(&row).unwrap();
    }
    out.flush().unwrap();
}
