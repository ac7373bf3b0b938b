//! Related token pairs of a vocabulary, for `related`: a word with and
//! without its leading-space marker (`Ġ`, `▁`, a space, or WordPiece's
//! `##` for the piece inside a word), a lower-case word and its
//! capitalised form, a token and its plural (the token with an `s`), and
//! the ten digits with each other. A model's own tokenizer puts the
//! members of such pairs close in a trained matrix; a tokenizer from
//! another model pairs rows that have nothing to do with each other.
//!
//! Only ordinary entries of the model vocabulary count (added tokens are
//! specials or placeholders), with ids within the matrix, and words of
//! three letters or more. The words are visited in an order spread over
//! the whole vocabulary, and each class stops at [`CAP`] pairs: a few
//! thousand rows to read, however large the vocabulary.

use std::collections::hash_map::Entry;

use foldhash::HashMap;

use crate::vocab::Vocab;

/// Pairs taken of each class at most.
pub(crate) const CAP: usize = 300;

/// The kind of relation between the two tokens of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Class {
    /// A word with and without its leading-space marker.
    Space,
    /// A lower-case word and its capitalised form.
    Case,
    /// A token and the token with an `s`.
    Plural,
    /// Two digits.
    Digits,
}

impl Class {
    /// The classes of words (not digits), in report order.
    pub(crate) const WORDS: [Class; 3] = [Class::Space, Class::Case, Class::Plural];

    /// The lowercase name, as JSON spells it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Class::Space => "space",
            Class::Case => "case",
            Class::Plural => "plural",
            Class::Digits => "digits",
        }
    }
}

/// Leading-space markers of the tokenizer kinds: byte-level BPE's `Ġ`,
/// SentencePiece's `▁`, a plain space (tokenizers that store text), and
/// WordPiece's `##` (which marks the other member: the piece inside a
/// word; either way the two differ by the marker).
const MARKERS: [&str; 4] = ["Ġ", "▁", " ", "##"];

/// The related pairs of each class in `vocab`, as (id, id) with both ids
/// below `rows`: each word class up to [`CAP`] pairs, then the digits.
pub(crate) fn pairs(vocab: &Vocab, rows: usize) -> Vec<(Class, Vec<(u32, u32)>)> {
    // Every member of a word pair is itself a word (a marker, then three
    // letters or more), and both members have the same stem: only words
    // are indexed, each string's first entry, as the tokenizer's lookup
    // has it, and of a large vocabulary only the words of a share of
    // the stems.
    let share = (STEM_BUCKETS * INDEXED).div_ceil(vocab.size().max(1));
    let mut words: Vec<(&str, &str, &str, u32)> = Vec::new();
    let mut ids: HashMap<&str, u32> = HashMap::default();
    ids.reserve(vocab.size().min(rows).min(2 * INDEXED));
    let mut digits: [Option<u32>; 10] = [None; 10];
    for (token, id) in vocab.model_entries() {
        if id as usize >= rows {
            continue;
        }
        if let [d @ b'0'..=b'9'] = token.as_bytes() {
            digits[usize::from(d - b'0')].get_or_insert(id);
            continue;
        }
        let (marker, word) = strip_marker(token);
        if word.len() < 3 || stem_bucket(word) >= share {
            continue;
        }
        if !word.chars().all(char::is_alphabetic) || word.chars().count() < 3 {
            continue;
        }
        if let Entry::Vacant(slot) = ids.entry(token) {
            slot.insert(id);
            words.push((token, marker, word, id));
        }
    }
    let mut found = Class::WORDS.map(|c| (c, Vec::new()));
    // The other member's string, made in one buffer for every lookup.
    let mut other = String::new();
    for i in spread(words.len()) {
        if found.iter().all(|(_, p)| p.len() >= CAP) {
            break;
        }
        let (token, marker, word, id) = words[i];
        let mut add = |class: usize, other: &str| {
            let list = &mut found[class].1;
            if list.len() < CAP
                && let Some(&other) = ids.get(other)
            {
                list.push((id, other));
            }
        };
        if !marker.is_empty() {
            add(0, word);
        }
        let mut chars = word.chars();
        if let Some(first) = chars.next().filter(|c| c.is_lowercase()) {
            other.clear();
            other.push_str(marker);
            other.extend(first.to_uppercase());
            other.push_str(chars.as_str());
            add(1, &other);
        }
        other.clear();
        other.push_str(token);
        other.push('s');
        add(2, &other);
    }
    let digits: Vec<u32> = digits.into_iter().flatten().collect();
    let digit_pairs = digits
        .iter()
        .enumerate()
        .flat_map(|(i, &a)| digits[i + 1..].iter().map(move |&b| (a, b)))
        .collect();
    let mut out: Vec<(Class, Vec<(u32, u32)>)> = found.into();
    out.push((Class::Digits, digit_pairs));
    out
}

/// `token` split into its leading-space marker (empty without one) and
/// the rest.
fn strip_marker(token: &str) -> (&str, &str) {
    MARKERS
        .iter()
        .find_map(|m| token.strip_prefix(m).map(|rest| (*m, rest)))
        .unwrap_or(("", token))
}

/// Words indexed, about, however large the vocabulary: a few times what
/// the pairs need in real vocabularies (where one word in five to ten
/// has a partner of each class), and far fewer than the words of a
/// 262,144-entry one, whose indexing cost more than the value pass.
const INDEXED: usize = 32_768;

/// The buckets stems fall into; a vocabulary indexes the words of
/// `INDEXED / size` of them (all, when it has fewer entries).
const STEM_BUCKETS: usize = 1024;

/// The bucket of `word`'s stem: its lower-case letters without a final
/// `s`, which the members of a pair share (`king`, `King`, `kings`).
fn stem_bucket(word: &str) -> usize {
    let stem = word.strip_suffix('s').unwrap_or(word);
    // FNV-1a over the lower-case chars, without making the string; ASCII
    // chars lower-cased directly, as `to_lowercase` costs more and is
    // asked of every entry.
    let step = |h: u64, c: char| (h ^ u64::from(u32::from(c))).wrapping_mul(0x0000_0100_0000_01b3);
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for c in stem.chars() {
        if c.is_ascii() {
            hash = step(hash, c.to_ascii_lowercase());
        } else {
            hash = c.to_lowercase().fold(hash, step);
        }
    }
    (hash % STEM_BUCKETS as u64) as usize
}

/// Runs the visits of [`spread`] interleave.
const RUNS: usize = 64;

/// The indices `0..n`, each once, in an order spread over the whole
/// range from the start: the first of each of [`RUNS`] equal runs, then
/// the second of each, and so on. Each run is read in order, so the
/// visits stay cheap on memory; a pseudo-random order spread as well
/// missed the cache at nearly every visit.
fn spread(n: usize) -> impl Iterator<Item = usize> {
    let len = n.div_ceil(RUNS);
    (0..len * RUNS)
        .map(move |k| (k % RUNS) * len + k / RUNS)
        .filter(move |&i| i < n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spread_order_visits_every_item_once_from_every_run() {
        for n in [0, 1, 2, 63, 64, 65, 1000, 30522] {
            let order: Vec<usize> = spread(n).collect();
            let mut seen = order.clone();
            seen.sort_unstable();
            assert_eq!(seen, (0..n).collect::<Vec<_>>(), "{n}");
            // The first visits reach the end of the range.
            if n >= 1000 {
                let reach = order[..RUNS].iter().max().unwrap();
                assert!(*reach >= n * 9 / 10, "{n}: {:?}", &order[..RUNS]);
            }
        }
    }

    #[test]
    fn the_members_of_a_pair_share_their_stem() {
        for (a, b) in [
            ("king", "King"),
            ("king", "kings"),
            ("été", "Été"),
            ("bus", "Bus"),
        ] {
            assert_eq!(stem_bucket(a), stem_bucket(b), "{a} {b}");
        }
        assert!(
            (0..50)
                .map(|i| stem_bucket(&format!("w{i}x")))
                .any(|b| b != stem_bucket("kin"))
        );
    }

    #[test]
    fn markers_come_off_the_front_only() {
        assert_eq!(strip_marker("Ġking"), ("Ġ", "king"));
        assert_eq!(strip_marker("▁King"), ("▁", "King"));
        assert_eq!(strip_marker("##ing"), ("##", "ing"));
        assert_eq!(strip_marker(" cat"), (" ", "cat"));
        assert_eq!(strip_marker("kingĠ"), ("", "kingĠ"));
    }

    #[test]
    fn pairs_of_each_class_are_found_within_the_rows() {
        let dir = tempfile::tempdir().unwrap();
        let tokens = [
            "Ġking", "king", "ĠKing", "Ġkings", "Ġqueen", "queen", "##ing", "ing", "0", "1", "2",
            "Ġab", "ab", "Ġdog", "dog",
        ];
        let vocab: Vec<String> = (tokens.iter().enumerate())
            .map(|(i, t)| format!("{t:?}: {i}"))
            .collect();
        let json = format!(
            r#"{{"model": {{"type": "WordLevel", "unk_token": "0", "vocab": {{{}}}}}}}"#,
            vocab.join(", ")
        );
        std::fs::write(dir.path().join("tokenizer.json"), json).unwrap();
        let v = Vocab::load(dir.path(), None).unwrap().unwrap();
        let found = |rows: usize| -> Vec<(Class, Vec<(u32, u32)>)> {
            let mut out = pairs(&v, rows);
            for (_, p) in &mut out {
                p.sort_unstable();
            }
            out
        };
        let all = found(tokens.len());
        assert_eq!(
            all,
            [
                (Class::Space, vec![(0, 1), (4, 5), (6, 7), (13, 14)]),
                (Class::Case, vec![(0, 2)]),
                (Class::Plural, vec![(0, 3)]),
                (Class::Digits, vec![(8, 9), (8, 10), (9, 10)]),
            ]
        );
        // Rows past the matrix have no place in a pair.
        let cut = found(5);
        assert_eq!(cut[0].1, [(0, 1)]);
        assert_eq!(cut[1].1, [(0, 2)]);
        assert!(cut[3].1.is_empty());
    }
}
