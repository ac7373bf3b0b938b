//! Tests of the VNNI kernel: quantization, its error bound on adversarial
//! rows and queries, and answers identical to the AVX-512 BF16 kernel.

use half::bf16;

use super::*;
use crate::dtype::Dtype;
use crate::progress::Progress;
use crate::search::kernel::Kernel;
use crate::search::shortlist::{Scorer, dot64};
use crate::search::tests::values;
use crate::search::top_k_with;

/// Rows that stress the quantization: one huge value among small ones, all
/// equal, all zero, subnormals only, subnormals beside a normal value,
/// BF16's largest values, a NaN, an infinity, a tiny scale; then random
/// rows. Values as stored (BF16).
fn adversarial(cols: usize, random: usize) -> Vec<Vec<f32>> {
    let sub = f32::from_bits(0x0001_0000); // the smallest BF16 subnormal
    let big = bf16::MAX.to_f32();
    let mut rows = vec![
        (0..cols)
            .map(|i| if i == 3 { 1e30 } else { 1e-3 })
            .collect(),
        vec![0.25; cols],
        vec![0.0; cols],
        (0..cols).map(|i| sub * (i % 7) as f32).collect(),
        (0..cols).map(|i| if i == 0 { 1.0 } else { sub }).collect(),
        (0..cols)
            .map(|i| if i % 2 == 0 { big } else { -big })
            .collect(),
        (0..cols)
            .map(|i| if i == 1 { f32::NAN } else { 0.5 })
            .collect(),
        (0..cols)
            .map(|i| if i == 2 { f32::INFINITY } else { 0.5 })
            .collect(),
        values(cols, 5).iter().map(|v| v * 1e-35).collect(),
        (0..cols).map(|i| if i == 5 { -3.0 } else { 0.0 }).collect(),
    ];
    for r in 0..random {
        rows.push(values(cols, 100 + r as u64));
    }
    rows.into_iter()
        .map(|r: Vec<f32>| r.into_iter().map(|v| bf16::from_f32(v).to_f32()).collect())
        .collect()
}

fn to_bytes(rows: &[Vec<f32>]) -> Vec<u8> {
    rows.iter()
        .flatten()
        .flat_map(|&v| bf16::from_f32(v).to_le_bytes())
        .collect()
}

#[test]
fn keys_keep_the_order_of_f64() {
    let xs = [
        f64::NEG_INFINITY,
        -1e300,
        -1.0,
        -0.0,
        0.0,
        1e-300,
        0.5,
        f64::INFINITY,
    ];
    for (a, b) in xs.iter().zip(&xs[1..]) {
        assert!(key(*a) <= key(*b), "{a} {b}");
        assert_eq!(unkey(key(*a)).to_bits(), a.to_bits());
    }
}

#[test]
fn quantization_round_trips_within_half_a_step() {
    if !crate::cpu::coverage::runs("avx512vnni", available()) {
        return;
    }
    for cols in [1, 63, 64, 100, 4096] {
        let rows = adversarial(cols, 4);
        let bytes = to_bytes(&rows);
        let p = Prepared::new(&rows[0], cols);
        let mut s = Scratch::default();
        p.first_pass(&bytes, &[], &mut s);
        let (width, stride) = (p.width, p.stride);
        for (r, (row, q)) in rows.iter().zip(&s.rows).enumerate() {
            let what = format!("cols {cols} row {r}");
            let finite = row.iter().all(|v| v.is_finite());
            let max = row.iter().fold(0f32, |m, v| m.max(v.abs()));
            assert_eq!(q.sure, finite && max >= TINY, "{what}");
            let exact = dot64(row, row);
            let gamma = 4.0 * (cols.div_ceil(CHUNK) + 6) as f64 * U;
            if exact < f64::from(f32::MAX) / 2.0 {
                // Relative, plus underflow (as `shortlist` allows).
                let flush = f64::from(f32::MIN_POSITIVE) * (cols as f64 + 64.0);
                let diff = (f64::from(q.norm2) - exact).abs();
                assert!(diff <= gamma * exact + flush, "{what}");
            }
            if !q.sure {
                continue;
            }
            let packed = &s.bytes[r * stride..r * stride + width];
            let mut err2 = 0.0;
            for (at, &byte) in packed.iter().enumerate() {
                let hat = i32::from(byte) - 128;
                assert!((-127..=127).contains(&hat), "{what}");
                let x = if at < cols { f64::from(row[at]) } else { 0.0 };
                let e = x - f64::from(q.scale) * f64::from(hat);
                assert!(e.abs() <= f64::from(q.scale) * 0.5001, "{what} col {at}");
                err2 += e * e;
            }
            assert!(err2.sqrt() <= residual_bound(q.err2, cols), "{what}");
            // Tight, unless the f32 squares overflow (then the row is refined).
            if q.err2.is_finite() {
                assert!(
                    residual_bound(q.err2, cols) <= err2.sqrt() * 1.001 + 1e-30,
                    "{what}"
                );
            }
        }
    }
}

#[test]
fn int8_scores_are_within_their_bound() {
    if !crate::cpu::coverage::runs("avx512vnni", available()) {
        return;
    }
    for cols in [1, 64, 300, 4096] {
        let rows = adversarial(cols, 20);
        let bytes = to_bytes(&rows);
        let m = Matrix::new("t", &bytes, Dtype::BF16, &[rows.len(), cols]).unwrap();
        // Queries: rows (exact in BF16), random, one huge value, zero.
        let mut queries = vec![rows[10].clone(), rows[0].clone(), rows[9].clone()];
        queries.push(values(cols, 7));
        queries.push((0..cols).map(|i| if i == 0 { 1e20 } else { 1.0 }).collect());
        queries.push(vec![0.0; cols]);
        let flat: Vec<f32> = queries.iter().flatten().copied().collect();
        let p = Prepared::new(&flat, cols);
        let q_norms: Vec<f64> = queries.iter().map(|q| dot64(q, q).sqrt()).collect();
        for metric in [Metric::Cosine, Metric::Dot] {
            let scorer = Scorer::new(Kernel::Avx512Vnni.bounds(cols), cols, metric, &q_norms);
            let got = p.estimates(&m, 0..rows.len(), &scorer);
            let mut checked = 0;
            for (r, row) in rows.iter().enumerate() {
                for (q, query) in queries.iter().enumerate() {
                    let Some((a, e)) = got[r * queries.len() + q] else {
                        continue;
                    };
                    let dot = dot64(row, query);
                    let exact = match metric {
                        Metric::Dot => dot,
                        Metric::Cosine => dot / (dot64(row, row).sqrt() * q_norms[q]),
                    };
                    let what = format!("cols {cols} {metric:?} row {r} query {q}");
                    assert!((a - exact).abs() <= e, "{what}: {a} ± {e} vs {exact}");
                    if metric == Metric::Cosine && r >= 10 && cols >= 300 && q != 4 {
                        assert!(e < 0.05, "{what}: bound {e}");
                    }
                    checked += 1;
                }
            }
            // The random rows against the sure queries at least.
            assert!(checked >= 20 * 4, "cols {cols} {metric:?}: {checked}");
        }
    }
}

#[test]
fn answers_are_the_avx512_bf16_ones_on_adversarial_rows() {
    if !crate::cpu::coverage::runs("avx512vnni", available()) {
        return;
    }
    let p = Progress::hidden();
    for cols in [1, 64, 300] {
        let rows = adversarial(cols, 300);
        let bytes = to_bytes(&rows);
        let m = Matrix::new("t", &bytes, Dtype::BF16, &[rows.len(), cols]).unwrap();
        let mut queries = vec![rows[12].clone(), rows[0].clone(), rows[4].clone()];
        queries.push(values(cols, 9));
        queries.push(vec![0.0; cols]);
        queries.push(rows[3].clone());
        let mask: Vec<bool> = (0..rows.len()).map(|i| i != 12).collect();
        for metric in [Metric::Cosine, Metric::Dot] {
            for k in [1, 5, 40] {
                let want = top_k_with(Kernel::Avx512Bf16, &m, &queries, k, metric, None, &p);
                let got = top_k_with(Kernel::Avx512Vnni, &m, &queries, k, metric, None, &p);
                assert_eq!(got, want, "cols {cols} {metric:?} k {k}");
                let want = top_k_with(Kernel::Avx512Bf16, &m, &queries, k, metric, Some(&mask), &p);
                let got = top_k_with(Kernel::Avx512Vnni, &m, &queries, k, metric, Some(&mask), &p);
                assert_eq!(got, want, "cols {cols} {metric:?} k {k} masked");
            }
        }
    }
}

#[test]
fn prefetching_the_next_block_leaves_the_sums_alone() {
    if !crate::cpu::coverage::runs("avx512vnni", available()) {
        return;
    }
    let cols = 300;
    let data = adversarial(cols, 40)[10..].to_vec();
    let bytes = to_bytes(&data);
    for nq in [1, 3, 7, 13] {
        let p = Prepared::new(&data[..nq].concat(), cols);
        for rows in [1, 5, 9, 32] {
            let block = &bytes[..rows * 2 * cols];
            let mut want = Scratch::default();
            p.first_pass(block, &[], &mut want);
            // Ahead: none, less than a line, an odd length, more than the
            // block.
            for ahead in [0, 10, 2 * cols + 7, bytes.len()] {
                let mut got = Scratch::default();
                p.first_pass(block, &bytes[..ahead], &mut got);
                assert_eq!(got.dots, want.dots, "{nq} queries, {rows} rows, {ahead}");
            }
        }
    }
}

/// In-cache timings of the quantization and the int8 tiles (not a test:
/// `cargo test --release --lib vnni::tests::timings -- --ignored --nocapture`).
#[test]
#[ignore]
fn timings() {
    if !crate::cpu::coverage::runs("avx512vnni", available()) {
        return;
    }
    use std::time::Instant;
    // `ROWS=N` rows per block (64 by default; 32 is the scan's).
    let rows = std::env::var("ROWS").map_or(64, |r| r.parse().expect("ROWS"));
    let (cols, nq, reps) = (4096, 64, 200 * 64 / rows);
    let data = adversarial(cols, rows.max(nq))[10..].to_vec();
    let bytes = to_bytes(&data[..rows]);
    let p = Prepared::new(&data[..nq].concat(), cols);
    let mut s = Scratch::default();
    p.first_pass(&bytes, &[], &mut s);
    let mut out = vec![0u8; p.width];
    // The fastest of 7 rounds (the machine is shared).
    let best = |f: &mut dyn FnMut()| {
        (0..7)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    };
    let secs = best(&mut || {
        for _ in 0..reps {
            for row in bytes.chunks_exact(2 * cols) {
                // SAFETY: `available` above.
                std::hint::black_box(unsafe { quantize_row(row, cols, &mut out) });
            }
        }
    });
    let ns = secs * 1e9 / (reps * rows) as f64;
    println!("quantize_row: {ns:.0} ns per row of {cols}");
    let t = Tiles {
        block: &s.bytes,
        width: p.width,
        stride: p.stride,
        hat: &p.hat,
        nq,
        ahead: &[],
    };
    let secs = best(&mut || {
        for _ in 0..reps {
            // SAFETY: `available` above.
            unsafe { walk(&t, rows, &mut s.dots) };
        }
    });
    let per = secs * 1e9 / (reps * rows * nq * p.width / CHUNK) as f64;
    println!("walk: {per:.3} ns per VPDPBUSD ({rows} rows x {nq} queries)");
}
