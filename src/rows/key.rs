//! The key by which duplicate rows are found ([`row_key`]): a hash of
//! short rows, of the sum of squares and a few sampled words of long ones,
//! so that keying every row costs little more than reading its bytes; and
//! the key of a row's values whatever its dtype ([`values_key`]), by which
//! `diff` finds a row copied from another model.

use super::row::Row;

/// Words of 8 bytes that [`row_key`] samples from a long row.
const SAMPLED_WORDS: usize = 16;

/// The key by which duplicate rows are found: a function of the row's
/// bytes only, so equal rows always get equal keys. Rows of up to
/// `16 * SAMPLED_WORDS` bytes are hashed whole ([`hash_row`]); longer ones
/// by their length, `sum` (the sum of squares computed from the bytes)
/// and [`SAMPLED_WORDS`] words spread evenly over the row, the first and
/// the last included. Different rows that agree on all of these (rows of
/// equal norm that differ only between the sampled words) get equal keys:
/// duplicates are confirmed by comparing bytes, so such collisions cost
/// time, never a wrong finding. Reading a few words instead of hashing
/// every byte takes the hash off the path of the value pass.
#[inline(always)]
pub(crate) fn row_key(row: &[u8], sum: f32) -> u64 {
    if row.len() <= 16 * SAMPLED_WORDS {
        return hash_row(row);
    }
    let last = row.len() - 8;
    let mut words = [0u8; 8 * SAMPLED_WORDS];
    for (i, w) in words.chunks_exact_mut(8).enumerate() {
        let at = i * last / (SAMPLED_WORDS - 1);
        w.copy_from_slice(&row[at..at + 8]);
    }
    let mut acc = KEYS;
    let (stripes, _) = words.as_chunks::<64>();
    for s in stripes {
        mix(&mut acc, s);
    }
    finish(acc, &sum.to_bits().to_le_bytes(), row.len())
}

/// The key of a row's values as f32, whatever its dtype, made as
/// [`row_key`] makes the key of a long row: the row's length, `sq` (its
/// sum of squares as the row loops make it, the same bit for bit for equal
/// values in any dtype) and [`SAMPLED_WORDS`] pairs of neighbouring values
/// spread evenly over the row, the first and the last included, each
/// value's f32 bits with -0 taken as +0. Rows of equal values have equal
/// keys: a BF16 row and the same row saved as F32 do. Different rows may
/// too; callers confirm a match by comparing values.
#[inline(always)]
pub(crate) fn values_key(row: impl Row, sq: f32) -> u64 {
    let n = row.len();
    let bits = |j: usize| {
        // `+ 0.0` turns -0 into +0 and leaves every other value as it is.
        let x = if j < n { row.at(j) + 0.0 } else { 0.0 };
        x.to_bits().to_le_bytes()
    };
    let last = n.saturating_sub(2);
    let mut words = [0u8; 8 * SAMPLED_WORDS];
    for (i, w) in words.chunks_exact_mut(8).enumerate() {
        let at = i * last / (SAMPLED_WORDS - 1);
        w[..4].copy_from_slice(&bits(at));
        w[4..].copy_from_slice(&bits(at + 1));
    }
    let mut acc = KEYS;
    let (stripes, _) = words.as_chunks::<64>();
    for s in stripes {
        mix(&mut acc, s);
    }
    finish(acc, &sq.to_bits().to_le_bytes(), n)
}

/// Starting keys of the eight hash lanes (hex digits of pi).
const KEYS: [u64; 8] = [
    0x243F_6A88_85A3_08D3,
    0x1319_8A2E_0370_7344,
    0xA409_3822_299F_31D0,
    0x082E_FA98_EC4E_6C89,
    0x4528_21E6_38D0_1377,
    0xBE54_66CF_34E9_0C6C,
    0xC0AC_29B7_C97C_50DD,
    0x3F84_D5B5_B547_0917,
];

/// A fast 64-bit hash of `bytes`, in the manner of XXH3's accumulate step:
/// eight lanes each add a word and the product of the word's halves mixed
/// with a key (a 32 × 32 → 64-bit multiply, which every SIMD unit has),
/// then rotate, so a word's place in the row matters. It is not resistant
/// to crafted collisions; duplicates are confirmed by comparing bytes, in
/// `O(n log n)` even when every row collides.
#[inline(always)]
pub(crate) fn hash_row(bytes: &[u8]) -> u64 {
    let mut acc = KEYS;
    let (stripes, rest) = bytes.as_chunks::<64>();
    for s in stripes {
        mix(&mut acc, s);
    }
    finish(acc, rest, bytes.len())
}

/// Mixes one 64-byte stripe into the eight lanes of [`hash_row`].
#[inline(always)]
fn mix(acc: &mut [u64; 8], stripe: &[u8; 64]) {
    // The rotation also keeps the compiler from vectorising across stripes
    // (gathers) instead of across the eight lanes of one stripe.
    for l in 0..8 {
        let w = u64::from_le_bytes(stripe[8 * l..8 * l + 8].try_into().expect("8 bytes"));
        let k = w ^ KEYS[l];
        acc[l] = acc[l]
            .wrapping_add(w)
            .wrapping_add((k & 0xFFFF_FFFF).wrapping_mul(k >> 32))
            .rotate_left(29);
    }
}

/// The end of [`hash_row`]: mixes the last `tail` bytes (fewer than 64)
/// zero-padded to a stripe, then merges the lanes and the length `len` as
/// XXH3 does: each pair of lanes, mixed with the keys, is multiplied to
/// 128 bits and folded, and the sum of the four is avalanched. The four
/// products are independent (a chain of eight multiplies made this the
/// slowest step of the row summary).
#[inline(always)]
fn finish(mut acc: [u64; 8], tail: &[u8], len: usize) -> u64 {
    let mut last = [0u8; 64];
    last[..tail.len()].copy_from_slice(tail);
    mix(&mut acc, &last);
    let fold = |a: u64, b: u64| {
        let p = u128::from(a) * u128::from(b);
        (p as u64) ^ ((p >> 64) as u64)
    };
    let mut h = (len as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for l in 0..4 {
        h = h.wrapping_add(fold(
            acc[2 * l] ^ KEYS[2 * l + 1],
            acc[2 * l + 1] ^ KEYS[2 * l],
        ));
    }
    h ^= h >> 37;
    h = h.wrapping_mul(0x1656_6791_9E37_79F9);
    h ^ (h >> 32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Dtype;
    use crate::rows::row::Bf16;

    #[test]
    fn hash_sees_every_byte_and_place() {
        let a: Vec<u8> = (0..150).map(|i| (i * 7) as u8).collect();
        let mut seen = std::collections::HashSet::new();
        assert!(seen.insert(hash_row(&a)));
        for i in 0..a.len() {
            let mut b = a.clone();
            b[i] ^= 1;
            assert!(seen.insert(hash_row(&b)), "byte {i}");
        }
        assert!(seen.insert(hash_row(&a[..149])));
        // Two 64-byte stripes swapped.
        let mut swapped = a[64..128].to_vec();
        swapped.extend_from_slice(&a[..64]);
        swapped.extend_from_slice(&a[128..]);
        assert!(seen.insert(hash_row(&swapped)));
        assert_eq!(hash_row(&a), hash_row(&a.clone()));
    }

    #[test]
    fn row_key_sees_samples_norm_and_length_only() {
        // Short rows are hashed whole.
        let short: Vec<u8> = (0..256).map(|i| i as u8).collect();
        let mut other = short.clone();
        other[100] ^= 1;
        assert_eq!(row_key(&short, 1.0), hash_row(&short));
        assert_ne!(row_key(&short, 1.0), row_key(&other, 1.0));
        // Long rows: the first and last words, every sampled word, the sum
        // and the length count; a byte between samples does not.
        let row: Vec<u8> = (0..8192).map(|i| (i * 7 + i / 256) as u8).collect();
        let key = row_key(&row, 2.5);
        assert_eq!(key, row_key(&row.clone(), 2.5));
        assert_ne!(key, row_key(&row, 2.25));
        assert_ne!(key, row_key(&row[..8190], 2.5));
        for at in [0, 7, 8184, 8191, 8184 * 7 / 15] {
            let mut b = row.clone();
            b[at] ^= 1;
            assert_ne!(key, row_key(&b, 2.5), "byte {at}");
        }
        let mut b = row.clone();
        b[20] ^= 1;
        assert_eq!(key, row_key(&b, 2.5));
    }

    #[test]
    fn values_key_sees_values_not_dtypes() {
        let values: Vec<f32> = (0..300)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 8.0)
            .collect();
        let bf16 = Dtype::BF16.encode(&values);
        let key = values_key(values.as_slice(), 9.5);
        assert_eq!(key, values_key(Bf16(&bf16), 9.5));
        assert_ne!(key, values_key(values.as_slice(), 9.25));
        assert_ne!(key, values_key(&values[..299], 9.5));
        let mut zeros = vec![0.0f32; 40];
        let plus = values_key(zeros.as_slice(), 0.0);
        zeros[3] = -0.0;
        assert_eq!(plus, values_key(zeros.as_slice(), 0.0));
        // The first and the last value are sampled; rows of one value too.
        for at in [0, 299] {
            let mut other = values.clone();
            other[at] += 1.0;
            assert_ne!(key, values_key(other.as_slice(), 9.5), "value {at}");
        }
        assert_ne!(
            values_key(&[1.0f32][..], 1.0),
            values_key(&[2.0f32][..], 1.0)
        );
    }
}
