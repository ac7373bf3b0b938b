//! Tests of word resolution (`king`, ` king`, `=king`) and of printed
//! forms reading back, on tokenizer files written by the fixture writers.

use super::tests::{byte_level_dir, load, sentencepiece_dir, wordpiece_dir};
use super::tokenizer_files as tf;
use super::*;

/// Vocabularies holding `king` both as a word and as a piece.
fn word_and_piece_dirs() -> [tempfile::TempDir; 3] {
    let bl = tempfile::tempdir().unwrap();
    let tokens = ["k", "i", "n", "g", "Ġ", "ki", "kin", "king", "Ġk", "Ġking"];
    let merges = [("k", "i"), ("ki", "n"), ("kin", "g"), ("Ġ", "k")];
    tf::write_byte_level_bpe(bl.path(), &tokens, &merges, &[]).unwrap();
    let sp = tempfile::tempdir().unwrap();
    let tokens = ["▁", "k", "i", "n", "g", "ki", "kin", "king", "▁king"];
    tf::write_sentencepiece_bpe(sp.path(), &tokens, &[], &[]).unwrap();
    let wp = tempfile::tempdir().unwrap();
    tf::write_wordpiece(wp.path(), &["king", "##king"], &[]).unwrap();
    [bl, sp, wp]
}

#[test]
fn bare_word_takes_the_word_and_names_the_piece() {
    let [bl, sp, wp] = word_and_piece_dirs();
    let (bl, sp, wp) = (load(bl.path()), load(sp.path()), load(wp.path()));
    type Case<'a> = (
        &'a Vocab,
        &'a str,
        Option<(u32, &'a str, Option<(u32, &'a str)>)>,
    );
    let cases: &[Case] = &[
        (&bl, "king", Some((9, "Ġking", Some((7, "king"))))),
        (&bl, " king", Some((9, "Ġking", None))),
        (&bl, "=king", Some((7, "king", None))),
        (&bl, "= king", Some((9, "Ġking", None))),
        (&bl, "=Ġking", Some((9, "Ġking", None))),
        (&bl, "Ġking", Some((9, "Ġking", None))),
        // Only the piece exists: the bare word takes it, ` ki` finds nothing.
        (&bl, "ki", Some((5, "ki", None))),
        (&bl, " ki", None),
        (&bl, "=kin", Some((6, "kin", None))),
        (&sp, "king", Some((267, "▁king", Some((266, "king"))))),
        (&sp, " king", Some((267, "▁king", None))),
        (&sp, "=king", Some((266, "king", None))),
        (&sp, "=▁king", Some((267, "▁king", None))),
        (&wp, "king", Some((5, "king", None))),
        (&wp, " king", Some((5, "king", None))),
        (&wp, "=##king", Some((6, "##king", None))),
        (&wp, "=queen", None),
    ];
    for (v, word, want) in cases {
        let got = v.resolve_word(word).unwrap();
        let want = want.map(|(id, raw, piece)| WordMatch {
            id,
            raw: raw.to_string(),
            piece: piece.map(|(id, raw)| (id, raw.to_string())),
            normalized: None,
        });
        assert_eq!(got, want, "{word:?} in {:?}", v.style());
    }
}

/// Every entry's printed form reads back, through [`Vocab::entry_id`], as
/// the same entry, and no two entries print alike.
#[test]
fn every_printed_token_reads_back() {
    let (bl, wp, sp) = (byte_level_dir(), wordpiece_dir(), sentencepiece_dir());
    let [bl2, sp2, wp2] = word_and_piece_dirs();
    // Entries that look alike unless escaped: a literal backslash-n, a
    // newline, a quote, a backslash, and (SentencePiece) chars stored both
    // as themselves and as byte entries.
    let tricky = tempfile::tempdir().unwrap();
    let tokens = ["\\", "n", "\\n", "Ċ", "\"", "Ġ\"", "Ġ\\", "<0x41>"];
    let added = [(8, "a \"quoted\"\ttab", false)];
    tf::write_byte_level_bpe(tricky.path(), &tokens, &[("\\", "n")], &added).unwrap();
    let sp_tricky = tempfile::tempdir().unwrap();
    let tokens = ["▁", "\\", "n", "\\n", "\"", "A", "\n"];
    tf::write_sentencepiece_bpe(sp_tricky.path(), &tokens, &[], &[]).unwrap();
    for dir in [&bl, &wp, &sp, &bl2, &sp2, &wp2, &tricky, &sp_tricky] {
        let v = load(dir.path());
        let mut seen = std::collections::HashMap::new();
        for id in 0..v.size() as u32 {
            let Some(printed) = v.readable(id) else {
                continue;
            };
            assert_eq!(v.entry_id(&printed), Some(id), "{printed:?} in {dir:?}");
            if let Some(other) = seen.insert(printed.clone(), id) {
                panic!("#{other} and #{id} both print {printed:?} in {dir:?}");
            }
        }
    }
    let v = load(tricky.path());
    let printed: Vec<String> = (0..9).filter_map(|id| v.readable(id)).collect();
    let want = [
        "\\\\",
        "n",
        "\\\\n",
        "\\n",
        "\\\"",
        " \\\"",
        " \\\\",
        "<0x41>",
        "a \\\"quoted\\\"\\ttab",
    ];
    assert_eq!(printed, want);
    let v = load(sp_tricky.path());
    // `<0x41>` and `<0x0A>` print as stored: `A` and a newline are entries.
    assert_eq!(v.readable(3 + 0x41).as_deref(), Some("<0x41>"));
    assert_eq!(v.readable(3 + 0x0A).as_deref(), Some("<0x0A>"));
    assert_eq!(v.readable(3 + 0x42).as_deref(), Some("B"));
    assert_eq!(v.entry_id("B"), Some(3 + 0x42));
}
