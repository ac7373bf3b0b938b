//! The portable kernel (`portable`): plain Rust on blocks converted to
//! f32, auto-vectorised for the compile target. It runs on every CPU, and
//! is the reference the SIMD kernels are tested against.

/// Row norms and dot products of a block of f32 rows (`cols > 0`), laid
/// out as `Queries::score_block` fills them.
pub(super) fn block(
    block: &[f32],
    cols: usize,
    queries: &[f32],
    mut norms: Option<&mut [f32]>,
    dots: &mut [f32],
) {
    let nq = queries.len() / cols;
    for (i, row) in block.chunks_exact(cols).enumerate() {
        if let Some(norms) = norms.as_deref_mut() {
            norms[i] = dot(row, row);
        }
        for (q, query) in queries.chunks_exact(cols).enumerate() {
            dots[i * nq + q] = dot(row, query);
        }
    }
}

/// A dot product in 16 independent f32 lanes, summed pairwise.
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 16];
    let (a_chunks, a_tail) = a.as_chunks::<16>();
    let (b_chunks, b_tail) = b.as_chunks::<16>();
    for (x, y) in a_chunks.iter().zip(b_chunks) {
        for j in 0..16 {
            acc[j] += x[j] * y[j];
        }
    }
    for (j, (x, y)) in a_tail.iter().zip(b_tail).enumerate() {
        acc[j] += x * y;
    }
    let mut width = 8;
    while width > 0 {
        for j in 0..width {
            acc[j] += acc[j + width];
        }
        width /= 2;
    }
    acc[0]
}
