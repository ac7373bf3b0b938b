//! The AMX kernel (`amx`; Linux, x86-64): BF16 tile products of 32 stored rows × 32
//! queries at a time, about ten times the multiply rate of AVX-512.
//!
//! A tiles are the stored rows, copied 32 rows at a time into tile order (16
//! rows × 32 columns, 1 KiB each), which also yields the rows' norms; B tiles
//! are the queries' `hi` and `lo` BF16 halves, packed once per search in the
//! pair-interleaved layout `TDPBF16PS` reads; four C tiles hold 32 × 32 f32
//! sums over all the columns. Each sum sees, for every 32-column step in
//! order, the `hi` then the `lo` product, wherever its row falls; a group of
//! 16 queries whose `lo` halves are all zero (queries taken from BF16 rows)
//! skips its `lo` products.
//!
//! A tile load costs about as much as three tile products, so
//! the loop keeps one load per product (two A and two B tiles for four C
//! tiles) and no C tile traffic inside a row pair.
//!
//! Rust has no stable AMX intrinsics, so the instructions are written as
//! inline assembly; the kernel asks Linux for AMX state once per process.

use std::arch::asm;
use std::arch::x86_64::*;
use std::sync::OnceLock;

use super::avx512bf16::Halves;

/// `arch_prctl` syscall number and arguments that allow AMX tile data.
const SYS_ARCH_PRCTL: i64 = 158;
const ARCH_REQ_XCOMP_PERM: i64 = 0x1023;
const XFEATURE_XTILEDATA: i64 = 18;

/// Rows (and queries) per tile.
const TILE: usize = 16;
/// BF16 columns per tile step (64 bytes).
pub(super) const STEP: usize = 32;

/// True when the CPU has AMX-TILE and AMX-BF16 (see `cpu::has_amx`) and
/// the operating system lets this process use them (asked once).
pub(super) fn available() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| crate::cpu::has_amx() && request_permission())
}

/// Asks Linux to enable AMX tile state for this process.
fn request_permission() -> bool {
    let ret: i64;
    // SAFETY: arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) only
    // changes which register state the kernel saves for this process; it
    // touches none of our memory. `syscall` clobbers rcx and r11.
    unsafe {
        asm!(
            "syscall",
            inlateout("rax") SYS_ARCH_PRCTL => ret,
            in("rdi") ARCH_REQ_XCOMP_PERM,
            in("rsi") XFEATURE_XTILEDATA,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret == 0
}

/// The queries as B tiles: for each half (hi, lo), each group of 16
/// queries and each 32-column step, 16 column pairs × 16 queries × 2 values.
pub(super) struct Packed {
    /// Groups of 16 queries, rounded up to even (tiles go in pairs).
    groups: usize,
    steps: usize,
    nq: usize,
    /// Per group: some query of the group has a nonzero `lo` half, so the
    /// group's `lo` products are computed.
    with_lo: Vec<bool>,
    data: Vec<u16>,
}

impl Packed {
    /// Packs queries of `cols` values (`cols` a multiple of 32), given as
    /// their BF16 halves.
    pub(super) fn new(halves: &Halves, cols: usize) -> Self {
        let (hi, lo) = (&halves.hi[..], &halves.lo[..]);
        assert!(cols > 0 && cols.is_multiple_of(STEP) && hi.len() == lo.len());
        let nq = hi.len() / cols;
        let groups = nq.div_ceil(2 * TILE) * 2;
        let steps = cols / STEP;
        let mut data = vec![0u16; 2 * groups * steps * TILE * STEP];
        for (part, values) in [hi, lo].into_iter().enumerate() {
            for (q, query) in values.chunks_exact(cols).enumerate() {
                let (group, lane) = (q / TILE, q % TILE);
                for (k, &v) in query.iter().enumerate() {
                    let (step, pair, half) = (k / STEP, (k % STEP) / 2, k % 2);
                    let tile = (part * groups + group) * steps + step;
                    data[tile * TILE * STEP + pair * STEP + 2 * lane + half] = v;
                }
            }
        }
        let with_lo = (0..groups)
            .map(|g| {
                let lanes = g * TILE..((g + 1) * TILE).min(nq);
                halves
                    .exact
                    .get(lanes)
                    .is_some_and(|e| !e.iter().all(|&e| e))
            })
            .collect();
        Packed {
            groups,
            steps,
            nq,
            with_lo,
            data,
        }
    }

    /// The B tile of `part` (0 = hi, 1 = lo), query group and step.
    fn tile(&self, part: usize, group: usize, step: usize) -> &[u16] {
        let at = ((part * self.groups + group) * self.steps + step) * TILE * STEP;
        &self.data[at..at + TILE * STEP]
    }
}

/// A 64-byte AMX tile configuration: palette 1, eight tiles of 16 rows × 64
/// bytes.
#[repr(C, align(64))]
struct Config([u8; 64]);

impl Config {
    fn new() -> Self {
        let mut c = [0u8; 64];
        c[0] = 1;
        for t in 0..8 {
            c[16 + 2 * t] = 64;
            c[48 + t] = TILE as u8;
        }
        Config(c)
    }
}

/// Dot products of the first `rows / 32 * 32` rows of `block` (stored BF16
/// rows of `cols` values) with every query, into `dots[row * nq + q]`, and
/// with `norms` (one per row of the block) the same rows' squared norms.
/// Returns how many rows were done; the caller handles the rest.
///
/// The rows go 32 at a time: packed as A tiles, then multiplied with every
/// query while the packed copy (256 KiB for rows of 4096) is in L2.
pub(super) fn block(
    block: &[u8],
    cols: usize,
    queries: &Packed,
    mut norms: Option<&mut [f32]>,
    dots: &mut [f32],
) -> usize {
    let row_bytes = cols * 2;
    assert!(cols.is_multiple_of(STEP) && queries.steps == cols / STEP);
    assert!(block.len().is_multiple_of(row_bytes));
    let rows = block.len() / row_bytes;
    let nq = queries.nq;
    assert_eq!(dots.len(), rows * nq, "dots length");
    let pair = 2 * TILE;
    PACKED_ROWS.with_borrow_mut(|packed| {
        for (p, raw) in block.chunks_exact(pair * row_bytes).enumerate() {
            let rows = p * pair..(p + 1) * pair;
            let norms = norms.as_deref_mut().map(|n| &mut n[rows.clone()]);
            pack_rows(raw, row_bytes, packed, norms);
            multiply(packed, queries, &mut dots[rows.start * nq..rows.end * nq]);
        }
    });
    rows / pair * pair
}

thread_local! {
    /// Each worker's buffer for rows packed as A tiles.
    static PACKED_ROWS: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Copies whole groups of 16 rows into A-tile order: for each group and
/// 32-column step, the 16 rows' 64 bytes back to back. Loading a tile from
/// the rows in place would read 16 lines one row apart, which for rows of
/// a power-of-two size all fall in one L1 set.
///
/// With `norms`, also each row's squared norm from the same loads, summed
/// exactly as the AVX-512 BF16 path sums it (BF16 products in 16 lanes, step
/// by step, then across the lanes), so a norm does not depend on the path.
fn pack_rows(rows: &[u8], row_bytes: usize, packed: &mut Vec<u8>, norms: Option<&mut [f32]>) {
    assert!(crate::cpu::has_avx512bf16());
    assert!(row_bytes.is_multiple_of(64) && rows.len().is_multiple_of(TILE * row_bytes));
    packed.resize(rows.len(), 0);
    // SAFETY: the CPU has AVX-512F, BW and BF16 (checked above).
    unsafe {
        match norms {
            Some(norms) => {
                assert_eq!(norms.len(), rows.len() / row_bytes, "norms length");
                pack_groups::<true>(rows, row_bytes, packed, norms);
            }
            None => pack_groups::<false>(rows, row_bytes, packed, &mut []),
        }
    }
}

/// Column steps of one row that [`pack_groups`] copies before moving to the
/// next row: 512 contiguous bytes rather than 64 measured 2-4% faster for
/// 64 queries (16 steps as fast; 32 and more slower, as the lines in flight
/// no longer fit L1).
const PACK_RUN: usize = 8;

/// [`pack_rows`] on whole groups, with or without norms.
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
fn pack_groups<const NORMS: bool>(
    rows: &[u8],
    row_bytes: usize,
    packed: &mut [u8],
    norms: &mut [f32],
) {
    let groups = rows
        .chunks_exact(TILE * row_bytes)
        .zip(packed.chunks_exact_mut(TILE * row_bytes));
    for (g, (group, out)) in groups.enumerate() {
        let lines: [&[[u8; 64]]; TILE] =
            std::array::from_fn(|r| group[r * row_bytes..][..row_bytes].as_chunks().0);
        let (out, _) = out.as_chunks_mut::<64>();
        let mut acc = [_mm512_setzero_ps(); TILE];
        let steps = row_bytes / 64;
        for s0 in (0..steps).step_by(PACK_RUN) {
            for r in 0..TILE {
                for s in s0..(s0 + PACK_RUN).min(steps) {
                    let (src, dst) = (&lines[r][s], &mut out[s * TILE + r]);
                    // SAFETY: `src` and `dst` are 64 bytes each; loadu and
                    // storeu have no alignment requirement.
                    let v = unsafe { _mm512_loadu_si512(src.as_ptr().cast()) };
                    // SAFETY: as above.
                    unsafe { _mm512_storeu_si512(dst.as_mut_ptr().cast(), v) };
                    if NORMS {
                        // SAFETY: both are plain 512-bit vectors.
                        let x = unsafe { std::mem::transmute::<__m512i, __m512bh>(v) };
                        acc[r] = _mm512_dpbf16_ps(acc[r], x, x);
                    }
                }
            }
        }
        if NORMS {
            for (r, acc) in acc.iter().enumerate() {
                norms[g * TILE + r] = _mm512_reduce_add_ps(*acc);
            }
        }
    }
}

/// The tile products of 32 packed rows with every query, into `dots`. The
/// row pair meets each pair of query groups over all the columns with its
/// four sums held in C tiles, so each sum sees every step's `hi` then `lo`
/// product in order.
fn multiply(packed: &[u8], queries: &Packed, dots: &mut [f32]) {
    assert!(available());
    let (nq, steps) = (queries.nq, queries.steps);
    let tile_bytes = TILE * 64;
    assert!(packed.len() == 2 * steps * tile_bytes && dots.len() == 2 * TILE * nq);
    let mut c = [[0f32; TILE * TILE]; 4];
    let config = Config::new();
    // SAFETY: AMX is available and enabled for this process (checked above);
    // the configuration is a valid palette-1 layout.
    unsafe { asm!("ldtilecfg [{0}]", in(reg) config.0.as_ptr(), options(nostack, readonly)) };
    for g in (0..queries.groups).step_by(2) {
        let (lo0, lo1) = (queries.with_lo[g], queries.with_lo[g + 1]);
        // SAFETY: AMX is configured (above); tilezero touches no memory.
        unsafe {
            asm!(
                "tilezero tmm0",
                "tilezero tmm1",
                "tilezero tmm2",
                "tilezero tmm3",
                options(nostack, nomem)
            )
        };
        for s in 0..steps {
            let a0 = &packed[s * tile_bytes..][..tile_bytes];
            let a1 = &packed[(steps + s) * tile_bytes..][..tile_bytes];
            let (h0, h1) = (queries.tile(0, g, s), queries.tile(0, g + 1, s));
            // SAFETY: each tileloadd reads 16 rows of 64 bytes at
            // stride 64, exactly one of the 1024-byte slices above (A
            // tiles of 1024 bytes, B tiles of 512 u16). tdpbf16ps
            // works on registers.
            unsafe {
                asm!(
                    "tileloadd tmm4, [{a0} + {b}*1]",
                    "tileloadd tmm5, [{a1} + {b}*1]",
                    "tileloadd tmm6, [{h0} + {b}*1]",
                    "tileloadd tmm7, [{h1} + {b}*1]",
                    "tdpbf16ps tmm0, tmm4, tmm6",
                    "tdpbf16ps tmm1, tmm4, tmm7",
                    "tdpbf16ps tmm2, tmm5, tmm6",
                    "tdpbf16ps tmm3, tmm5, tmm7",
                    a0 = in(reg) a0.as_ptr(),
                    a1 = in(reg) a1.as_ptr(),
                    h0 = in(reg) h0.as_ptr(),
                    h1 = in(reg) h1.as_ptr(),
                    b = in(reg) 64usize,
                    options(nostack, readonly),
                )
            };
            // The `lo` products of each group that has any, after
            // its `hi` ones; tmm4 and tmm5 still hold the A tiles.
            if lo0 {
                let l0 = queries.tile(1, g, s);
                // SAFETY: as above, one B tile of 512 u16.
                unsafe {
                    asm!(
                        "tileloadd tmm6, [{l0} + {b}*1]",
                        "tdpbf16ps tmm0, tmm4, tmm6",
                        "tdpbf16ps tmm2, tmm5, tmm6",
                        l0 = in(reg) l0.as_ptr(),
                        b = in(reg) 64usize,
                        options(nostack, readonly),
                    )
                };
            }
            if lo1 {
                let l1 = queries.tile(1, g + 1, s);
                // SAFETY: as above, one B tile of 512 u16.
                unsafe {
                    asm!(
                        "tileloadd tmm7, [{l1} + {b}*1]",
                        "tdpbf16ps tmm1, tmm4, tmm7",
                        "tdpbf16ps tmm3, tmm5, tmm7",
                        l1 = in(reg) l1.as_ptr(),
                        b = in(reg) 64usize,
                        options(nostack, readonly),
                    )
                };
            }
        }
        // SAFETY: each tilestored writes 16 rows of 64 bytes at stride
        // 64, exactly one `[f32; 256]`.
        unsafe {
            asm!(
                "tilestored [{c0} + {b}*1], tmm0",
                "tilestored [{c1} + {b}*1], tmm1",
                "tilestored [{c2} + {b}*1], tmm2",
                "tilestored [{c3} + {b}*1], tmm3",
                c0 = in(reg) c[0].as_mut_ptr(),
                c1 = in(reg) c[1].as_mut_ptr(),
                c2 = in(reg) c[2].as_mut_ptr(),
                c3 = in(reg) c[3].as_mut_ptr(),
                b = in(reg) 64usize,
                options(nostack),
            )
        };
        for (t, tile) in c.iter().enumerate() {
            let (row0, q0) = (TILE * (t / 2), (g + t % 2) * TILE);
            let lanes = nq.saturating_sub(q0).min(TILE);
            if lanes == 0 {
                continue;
            }
            for (i, sums) in tile.chunks_exact(TILE).enumerate() {
                let at = (row0 + i) * nq + q0;
                dots[at..at + lanes].copy_from_slice(&sums[..lanes]);
            }
        }
    }
    // SAFETY: releases the tile state configured above.
    unsafe { asm!("tilerelease", options(nostack, nomem)) };
}
