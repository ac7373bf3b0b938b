//! Tests of the kernels' own pieces (conversions, rows decoded in
//! registers, AMX's tiles) and the run's coverage line. Every test that
//! needs an instruction set asks `cpu::coverage` first, so a skip is
//! recorded and, when `EMBSCOPE_REQUIRE_KERNELS` names the kernel, fails.

use super::*;
use crate::cpu::coverage;
use crate::search::tests::{score_all, store, values};

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[test]
fn amx_takes_matrices_whose_columns_fit_its_tiles() {
    if !coverage::runs("amx", amx::available()) {
        return;
    }
    let fits = Queries::new(Kernel::Amx, Dtype::BF16, &[vec![0.5; 64]]);
    assert_eq!(fits.block_bytes(), 1 << 20);
    let odd = Queries::new(Kernel::Amx, Dtype::BF16, &[vec![0.5; 48]]);
    assert_eq!(odd.block_bytes(), 256 * 1024);
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[test]
fn amx_row_norms_are_the_avx512_bf16_ones_bit_for_bit() {
    if !coverage::runs("amx", amx::available()) {
        return;
    }
    // Two row pairs go through AMX (norms from the packing), 6 rows through
    // AVX-512 BF16; 320 columns are more than one packing run.
    let (rows, cols) = (70, 320);
    let (bytes, _) = store(&values(rows * cols, 5), Dtype::BF16);
    let m = Matrix::new("t", &bytes, Dtype::BF16, &[rows, cols]).unwrap();
    let queries = [values(cols, 9)];
    let norms_of = |kernel| score_all(&m, kernel, &queries).0;
    assert_eq!(norms_of(Kernel::Amx), norms_of(Kernel::Avx512Bf16));
}

#[cfg(target_arch = "x86_64")]
#[test]
fn simd_bf16_conversion_is_the_matrix_one() {
    if !coverage::runs("avx512", cpu::has_avx512()) {
        return;
    }
    let mut vals = values(37, 4);
    vals.extend([f32::NAN, f32::INFINITY, -0.0, 1e-39, -3e38]);
    let (bytes, want) = store(&vals, Dtype::BF16);
    let mut got = vec![0.0; vals.len()];
    avx512::bf16_to_f32(&bytes, &mut got);
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&got), bits(&want));
}

#[cfg(target_arch = "x86_64")]
#[test]
fn simd_f16_conversion_is_the_matrix_one() {
    if !coverage::runs("avx512", cpu::has_avx512()) {
        return;
    }
    // Normal, subnormal (6e-8 is the smallest F16), infinite, signed zero;
    // a NaN stays a NaN (its quiet bit may differ).
    let mut vals = values(37, 5);
    vals.extend([f32::INFINITY, -0.0, 6e-8, -3e-5, 65504.0, f32::NAN]);
    let (bytes, want) = store(&vals, Dtype::F16);
    let mut got = vec![0.0; vals.len()];
    avx512::f16_to_f32(&bytes, &mut got);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
            "{i}: {g} {w}"
        );
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn gguf_blocks_decoded_in_registers_sum_as_the_decoded_block_bit_for_bit() {
    use candle_core::quantized::{GgmlDType, QTensor};
    use candle_core::{Device, Tensor};
    if !coverage::runs("avx512", cpu::has_avx512()) {
        return;
    }
    let (rows, cols) = (21, 512);
    // Values of every row scaled differently, a zero row among them.
    let mut vals = values(rows * cols, 8);
    for (i, row) in vals.chunks_mut(cols).enumerate() {
        let scale = if i == 5 { 0.0 } else { 1.0 + i as f32 };
        row.iter_mut().for_each(|x| *x *= scale);
    }
    let t = Tensor::from_slice(&vals, (rows, cols), &Device::Cpu).unwrap();
    for (dtype, g) in [(Dtype::Q8_0, GgmlDType::Q8_0)] {
        let bytes = QTensor::quantize(&t, g)
            .unwrap()
            .data()
            .unwrap()
            .into_owned();
        let m = Matrix::new("t", &bytes, dtype, &[rows, cols]).unwrap();
        let mut decoded = vec![0.0; rows * cols];
        m.block_into(0..rows, &mut decoded);
        let kind = stored::quant_kind(dtype).expect("decoded in registers");
        for nq in 1..=7 {
            let queries = values(nq * cols, 9 + nq as u64);
            let (mut n1, mut d1) = (vec![0.0; rows], vec![0.0; rows * nq]);
            let (mut n2, mut d2) = (vec![0.0; rows], vec![0.0; rows * nq]);
            avx512::block_avx512(&bytes, kind, cols, &queries, Some(&mut n1), &mut d1);
            avx512::block_f32_avx512(&decoded, cols, &queries, Some(&mut n2), &mut d2);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&n1), bits(&n2), "{dtype} norms");
            assert_eq!(bits(&d1), bits(&d2), "{dtype} {nq} queries");
            // The AVX2 tiles likewise, against their own on the f32 rows.
            if coverage::runs("avx2", cpu::has_avx2() && cpu::has_f16c()) {
                let f32_bytes: Vec<u8> = decoded.iter().flat_map(|x| x.to_le_bytes()).collect();
                let q8 = avx2::Layout::new(&queries, cols, dtype).expect("Q8_0 in place");
                let f32s = avx2::Layout::new(&queries, cols, Dtype::F32).expect("F32");
                avx2::block(&bytes, &q8, Some(&mut n1), &mut d1);
                avx2::block(&f32_bytes, &f32s, Some(&mut n2), &mut d2);
                assert_eq!(bits(&n1), bits(&n2), "{dtype} AVX2 norms");
                assert_eq!(bits(&d1), bits(&d2), "{dtype} AVX2 {nq} queries");
            }
        }
    }
}

/// Runs every kernel this build has on a small BF16 matrix, against the
/// portable one, and prints the run's coverage line (straight to stderr,
/// past the test harness's capture, so a plain `cargo test` shows it).
#[test]
fn kernel_coverage() {
    use std::io::Write;
    coverage::required(); // an unknown name fails here too
    let (rows, cols) = (300, 96);
    let (bytes, _) = store(&values(rows * cols, 31), Dtype::BF16);
    let m = Matrix::new("t", &bytes, Dtype::BF16, &[rows, cols]).unwrap();
    let queries: Vec<Vec<f32>> = (0..5).map(|q| values(cols, 40 + q)).collect();
    let run = |kernel| {
        let prepared = Queries::new(kernel, Dtype::BF16, &queries);
        let plan = super::super::choose::Plan::settled(prepared, "a test".into());
        let progress = crate::progress::Progress::hidden();
        let metric = crate::search::Metric::Cosine;
        super::super::search(plan, &m, &queries, 7, metric, None, &progress).0
    };
    let want = run(Kernel::Portable);
    for kernel in Kernel::tested(Dtype::BF16) {
        assert_eq!(run(kernel), want, "{kernel:?}");
    }
    crate::cpu::RowBuild::tested();
    let line = coverage::line();
    let _ = writeln!(std::io::stderr(), "{line}");
}
