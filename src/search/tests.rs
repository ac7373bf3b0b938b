//! Tests of the search: semantics on small hand-made matrices, every kernel
//! against an f64 reference, and independence from the thread count.

use half::{bf16, f16};

use super::kernel::{Kernel, Queries};
use super::shortlist::dot64;
use super::*;
use crate::dtype::Dtype;

/// A tiny deterministic generator (xorshift), values in [-1, 1); the
/// kernels' own tests use it too.
pub(super) fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// `vals` stored as `dtype`, plus the values as stored (rounded) in f32.
pub(super) fn store(vals: &[f32], dtype: Dtype) -> (Vec<u8>, Vec<f32>) {
    let mut bytes = Vec::new();
    for &v in vals {
        match dtype {
            Dtype::F32 => bytes.extend(v.to_le_bytes()),
            Dtype::F16 => bytes.extend(f16::from_f32(v).to_le_bytes()),
            Dtype::BF16 => bytes.extend(bf16::from_f32(v).to_le_bytes()),
            Dtype::F8_E4M3 => bytes.push(float8::F8E4M3::from_f32(v).to_bits()),
            other => panic!("no test encoding for {other}"),
        }
    }
    let mut stored = vec![0.0; vals.len()];
    crate::matrix::convert(dtype, &bytes, &mut stored);
    (bytes, stored)
}

fn f32_matrix<'a>(bytes: &'a [u8], rows: usize, cols: usize) -> Matrix<'a> {
    Matrix::new("t", bytes, Dtype::F32, &[rows, cols]).unwrap()
}

fn hits(list: &[Hit]) -> Vec<(u32, f32)> {
    list.iter().map(|h| (h.id, h.score)).collect()
}

/// `top_k` with the kernel it chooses, lists only.
fn top_k(
    m: &Matrix,
    queries: &[Vec<f32>],
    k: usize,
    metric: Metric,
    mask: Option<&[bool]>,
    progress: &Progress,
) -> Vec<Vec<Hit>> {
    super::top_k(m, queries, k, metric, mask, progress)
        .unwrap()
        .lists
}

#[test]
fn cosine_zero_rows_ties_and_order() {
    // row 0 = zero, rows 1 and 3 identical, row 2 opposite, row 4 = 2 * row 1.
    let rows: [[f32; 2]; 5] = [[0.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [1.0, 0.0], [2.0, 0.0]];
    let bytes: Vec<u8> = rows
        .iter()
        .flatten()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let m = f32_matrix(&bytes, 5, 2);
    let p = Progress::hidden();
    let got = top_k(&m, &[vec![3.0, 0.0]], 10, Metric::Cosine, None, &p);
    assert_eq!(
        hits(&got[0]),
        [(1, 1.0), (3, 1.0), (4, 1.0), (0, 0.0), (2, -1.0)]
    );
    let got = top_k(&m, &[vec![3.0, 0.0]], 2, Metric::Dot, None, &p);
    assert_eq!(hits(&got[0]), [(4, 6.0), (1, 3.0)]);
    let mask = [true, false, true, true, true];
    let got = top_k(&m, &[vec![1.0, 0.0]], 2, Metric::Cosine, Some(&mask), &p);
    assert_eq!(hits(&got[0]), [(3, 1.0), (4, 1.0)]);
    let got = top_k(&m, &[vec![0.0, 0.0]], 2, Metric::Cosine, None, &p);
    assert_eq!(hits(&got[0]), [(0, 0.0), (1, 0.0)]);
    assert_eq!(
        top_k(&m, &vec![vec![1.0, 0.0]; 2], 0, Metric::Dot, None, &p),
        [vec![], vec![]]
    );
    assert!(top_k(&m, &[], 3, Metric::Dot, None, &p).is_empty());
}

#[test]
fn nan_and_infinite_rows_are_never_results() {
    let rows: [[f32; 2]; 4] = [
        [f32::NAN, 1.0],
        [1.0, 1.0],
        [f32::INFINITY, 0.0],
        [-1.0, 0.5],
    ];
    let bytes: Vec<u8> = rows
        .iter()
        .flatten()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let m = f32_matrix(&bytes, 4, 2);
    let got = top_k(
        &m,
        &[vec![1.0, 0.0]],
        10,
        Metric::Cosine,
        None,
        &Progress::hidden(),
    );
    let ids: Vec<u32> = got[0].iter().map(|h| h.id).collect();
    assert_eq!(ids, [1, 3]);
    let got = top_k(
        &m,
        &[vec![1.0, 0.0]],
        10,
        Metric::Dot,
        None,
        &Progress::hidden(),
    );
    let ids: Vec<u32> = got[0].iter().map(|h| h.id).collect();
    assert_eq!(ids, [2, 1, 3]);
}

/// Scores of every row against every query, exact as the search defines
/// them: f64 over the stored values.
fn reference(stored: &[f32], cols: usize, queries: &[Vec<f32>], metric: Metric) -> Vec<Vec<f64>> {
    let norm = |v: &[f32]| dot64(v, v).sqrt();
    queries
        .iter()
        .map(|q| {
            stored
                .chunks_exact(cols)
                .map(|row| {
                    let dot = dot64(row, q);
                    match metric {
                        Metric::Dot => dot,
                        Metric::Cosine if norm(row) == 0.0 || norm(q) == 0.0 => 0.0,
                        Metric::Cosine => dot / (norm(row) * norm(q)),
                    }
                })
                .collect()
        })
        .collect()
}

/// The best `k` rows `allowed` by `scores`, ties to the lower id.
fn best(scores: &[f64], k: usize, allowed: &[bool]) -> Vec<(u32, f32)> {
    let mut order: Vec<usize> = (0..scores.len())
        .filter(|&i| allowed[i] && !scores[i].is_nan())
        .collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    order
        .into_iter()
        .take(k)
        .map(|i| (i as u32, scores[i] as f32))
        .collect()
}

/// Checks that every kernel's top `k` of `m` (whose values as stored are
/// `stored`) for `queries` is exactly the reference's, both metrics.
fn assert_every_kernel_matches(
    m: &Matrix,
    stored: &[f32],
    queries: &[Vec<f32>],
    mask: &[bool],
    k: usize,
) {
    let p = Progress::hidden();
    let (dtype, rows, cols) = (m.dtype(), m.rows(), m.cols());
    let nq = queries.len();
    for metric in [Metric::Cosine, Metric::Dot] {
        let want = reference(stored, cols, queries, metric);
        for kernel in Kernel::tested(dtype) {
            let got = top_k_with(kernel, m, queries, k, metric, Some(mask), &p);
            for (q, list) in got.iter().enumerate() {
                let what = format!("{dtype} {rows}x{cols} {nq}q k{k} {metric:?} {kernel:?} q{q}");
                assert_eq!(hits(list), best(&want[q], k, mask), "{what}");
            }
        }
    }
}

#[test]
fn every_kernel_matches_the_f64_reference() {
    for (dtype, rows, cols) in [
        (Dtype::BF16, 1000, 300),
        (Dtype::BF16, 37, 4096),
        (Dtype::BF16, 50, 31),
        (Dtype::BF16, 100, 64),
        (Dtype::BF16, 70, 96),
        (Dtype::F32, 700, 77),
        (Dtype::F32, 40, 512),
        (Dtype::F16, 600, 129),
        (Dtype::F16, 40, 512),
        (Dtype::F8_E4M3, 300, 64),
    ] {
        let (bytes, stored) = store(&values(rows * cols, rows as u64), dtype);
        let m = Matrix::new("t", &bytes, dtype, &[rows, cols]).unwrap();
        let mask: Vec<bool> = (0..rows).map(|i| i % 7 != 3).collect();
        for nq in [1, 2, 3, 4, 5, 9, 33] {
            let queries: Vec<Vec<f32>> = (0..nq).map(|q| values(cols, 1000 + q as u64)).collect();
            // The full ranking on small matrices, a top 7 on all.
            if rows * cols <= 40_000 {
                assert_every_kernel_matches(&m, &stored, &queries, &mask, rows);
            }
            assert_every_kernel_matches(&m, &stored, &queries, &mask, 7);
        }
    }
}

#[test]
fn exact_bf16_queries_among_others_match_the_f64_reference() {
    // Rows of the matrix (exact in BF16, so the BF16 kernels skip their `lo`
    // products) mixed with queries that are not: whole query tiles and AMX
    // groups of each kind, and mixed ones; 320 columns are 10 AMX steps,
    // more than one packing run.
    for (rows, cols) in [(300, 96), (90, 40), (70, 320)] {
        let (bytes, stored) = store(&values(rows * cols, 11), Dtype::BF16);
        let m = Matrix::new("t", &bytes, Dtype::BF16, &[rows, cols]).unwrap();
        let mask: Vec<bool> = (0..rows).map(|i| i % 5 != 2).collect();
        let row = |i: usize| stored[i * cols..(i + 1) * cols].to_vec();
        let other = |q: usize| values(cols, 500 + q as u64);
        let exact = |q: usize| q < 16 || (32..36).contains(&q) || q.is_multiple_of(7);
        for nq in [1, 5, 16, 40, 70] {
            let queries: Vec<Vec<f32>> = (0..nq)
                .map(|q| {
                    if exact(q) {
                        row(3 * q % rows)
                    } else {
                        other(q)
                    }
                })
                .collect();
            assert_every_kernel_matches(&m, &stored, &queries, &mask, 10);
        }
    }
}

#[test]
fn results_do_not_depend_on_thread_count() {
    // 2.3 MB: several blocks for every kernel (AMX blocks are 1 MiB), so
    // the per-worker lists really are merged.
    let (rows, cols) = (12_000, 96);
    let (bytes, _) = store(&values(rows * cols, 7), Dtype::BF16);
    // Duplicate rows make exact ties, which must break by id.
    let mut bytes = bytes;
    let row = cols * 2;
    bytes.copy_within(10 * row..11 * row, 2500 * row);
    let m = Matrix::new("t", &bytes, Dtype::BF16, &[rows, cols]).unwrap();
    let queries: Vec<Vec<f32>> = (0..6).map(|q| values(cols, 50 + q)).collect();
    let run = |threads: usize, kernel: Kernel| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            top_k_with(
                kernel,
                &m,
                &queries,
                25,
                Metric::Cosine,
                None,
                &Progress::hidden(),
            )
        })
    };
    let one = run(1, Kernel::Portable);
    for kernel in Kernel::tested(Dtype::BF16) {
        assert_eq!(one, run(1, kernel), "{kernel:?}");
        assert_eq!(one, run(3, kernel), "{kernel:?}");
        assert_eq!(one, run(8, kernel), "{kernel:?}");
    }
}

#[test]
fn duplicate_rows_tie_to_the_lower_id() {
    let (rows, cols) = (3000, 64);
    let (mut bytes, _) = store(&values(rows * cols, 21), Dtype::BF16);
    let row = cols * 2;
    for at in [2900, 17, 1500] {
        bytes.copy_within(400 * row..401 * row, at * row);
    }
    let m = Matrix::new("t", &bytes, Dtype::BF16, &[rows, cols]).unwrap();
    let query = m.row(400);
    for kernel in Kernel::tested(Dtype::BF16) {
        let got = top_k_with(
            kernel,
            &m,
            std::slice::from_ref(&query),
            4,
            Metric::Cosine,
            None,
            &Progress::hidden(),
        );
        let ids: Vec<u32> = got[0].iter().map(|h| h.id).collect();
        assert_eq!(ids, [17, 400, 1500, 2900], "{kernel:?}");
        assert!(
            got[0].iter().all(|h| h.score == got[0][0].score),
            "{kernel:?}"
        );
    }
}

#[test]
fn shortlist_holds_the_true_top_k_among_near_ties() {
    // 4096 columns (the deepest sums) and rows that differ from one base
    // row by one BF16 step in a few places: their scores differ by about
    // 1e-6, below what the f32 kernels resolve. Half the queries are not
    // exact in BF16 (hi + lo halves), one is a zero query.
    let (rows, cols) = (300, 4096);
    let base = values(cols, 77);
    let noise = values(rows * 4, 78);
    let mut vals = Vec::with_capacity(rows * cols);
    for r in 0..rows {
        let mut row = base.clone();
        if r % 3 != 0 {
            for j in 0..4 {
                let at = (noise[r * 4 + j].abs() * cols as f32) as usize % cols;
                let bits = half::bf16::from_f32(row[at]).to_bits();
                let step = if noise[r * 4 + j] > 0.0 { 1 } else { u16::MAX };
                row[at] = half::bf16::from_bits(bits.wrapping_add(step)).to_f32();
            }
        } else {
            row = values(cols, 1000 + r as u64);
        }
        vals.extend(row);
    }
    let (bytes, stored) = store(&vals, Dtype::BF16);
    let m = Matrix::new("t", &bytes, Dtype::BF16, &[rows, cols]).unwrap();
    let mut queries: Vec<Vec<f32>> = (0..6)
        .map(|q| {
            let wiggle = values(cols, 300 + q);
            let scale = if q % 2 == 0 { 0.0 } else { 1e-3 };
            base.iter()
                .zip(&wiggle)
                .map(|(b, w)| b + scale * w)
                .collect()
        })
        .collect();
    queries.push(vec![0.0; cols]);
    let mask = vec![true; rows];
    for k in [1, 10, 40] {
        assert_every_kernel_matches(&m, &stored, &queries, &mask, k);
    }
}

/// Every row's squared norm and its dot products with `queries` (row-major,
/// one per query), from one block of `kernel` over the whole BF16 matrix.
pub(super) fn score_all(m: &Matrix, kernel: Kernel, queries: &[Vec<f32>]) -> (Vec<f32>, Vec<f32>) {
    let q = Queries::new(kernel, Dtype::BF16, queries);
    let rows = m.rows();
    let (mut norms, mut dots) = (vec![0.0; rows], vec![0.0; rows * queries.len()]);
    q.score_block(
        m,
        0..rows,
        &mut Default::default(),
        Some(&mut norms),
        &mut dots,
    );
    (norms, dots)
}

#[test]
fn every_kernel_agrees_with_the_portable_one_within_the_bound() {
    let (rows, cols) = (67, 1000);
    let (bytes, stored) = store(&values(rows * cols, 31), Dtype::BF16);
    let m = Matrix::new("t", &bytes, Dtype::BF16, &[rows, cols]).unwrap();
    let queries: Vec<Vec<f32>> = (0..13).map(|q| values(cols, 40 + q)).collect();
    let nq = queries.len();
    let run = |kernel| score_all(&m, kernel, &queries);
    let (norms, dots) = run(Kernel::Portable);
    let size = |v: &[f32]| dot64(v, v).sqrt();
    // (The VNNI kernel's scores here are its int8 ones, with their own
    // bound: see `kernel::avx512vnni`.)
    for kernel in Kernel::tested(Dtype::BF16) {
        #[cfg(target_arch = "x86_64")]
        if kernel == Kernel::Avx512Vnni {
            continue;
        }
        let (n, d) = run(kernel);
        let gamma = kernel.depth(cols) as f64 / f64::from(1u32 << 24) + 1.0 / f64::from(1u32 << 17);
        for r in 0..rows {
            let row = &stored[r * cols..(r + 1) * cols];
            let exact = dot64(row, row);
            assert!(
                (f64::from(n[r]) - exact).abs() <= gamma * exact,
                "{kernel:?} norm {r}"
            );
            assert!((f64::from(norms[r]) - exact).abs() <= gamma * exact);
            for q in 0..nq {
                let bound = gamma * size(row) * size(&queries[q]);
                let exact = dot64(row, &queries[q]);
                let got = f64::from(d[r * nq + q]);
                assert!(
                    (got - exact).abs() <= bound,
                    "{kernel:?} {r} {q}: {got} vs {exact}"
                );
                assert!((f64::from(dots[r * nq + q]) - exact).abs() <= bound);
            }
        }
    }
}

#[test]
fn a_scan_shared_by_the_trial_s_kernels_gives_the_exact_answer() {
    // 32 MiB of BF16 rows, the least the trial measures: 4096 rows of 4096.
    let (rows, cols) = (4096, 4096);
    let (bytes, stored) = store(&values(rows * cols, 11), Dtype::BF16);
    let m = Matrix::new("t", &bytes, Dtype::BF16, &[rows, cols]).unwrap();
    let row = |i: usize| &stored[i * cols..(i + 1) * cols];
    // 16 queries: where the kernel that wins depends on the CPU, so a CPU
    // with two kernels that can win times them.
    let queries: Vec<Vec<f32>> = (0..16).map(|q| row(7 + 250 * q).to_vec()).collect();
    let found = super::top_k(&m, &queries, 3, Metric::Cosine, None, &Progress::hidden()).unwrap();
    let reason = &found.kernel.reason;
    assert!(
        reason.starts_with("measured fastest in a trial on the scan's first blocks (")
            || reason.starts_with("the fastest path")
            || reason.starts_with("the widest path"),
        "{reason}"
    );
    for (q, list) in queries.iter().zip(&found.lists) {
        let mut exact: Vec<(f64, u32)> = (0..rows)
            .map(|i| {
                let r = row(i);
                (dot64(r, q) / (dot64(r, r) * dot64(q, q)).sqrt(), i as u32)
            })
            .collect();
        exact.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let want: Vec<u32> = exact[..3].iter().map(|e| e.1).collect();
        assert_eq!(list.iter().map(|h| h.id).collect::<Vec<_>>(), want);
        for (h, e) in list.iter().zip(&exact) {
            assert!((f64::from(h.score) - e.0).abs() < 1e-6, "{h:?} {e:?}");
        }
    }
}
