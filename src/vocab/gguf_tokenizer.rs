//! Rebuilding a `tokenizers::Tokenizer` from a GGUF vocabulary, so `--text`
//! encodes as llama.cpp does, with the same pipeline Hugging Face's
//! conversions use:
//!
//! - `gpt2`: byte-level BPE from `tokens` + `merges`, split first by the
//!   regex `tokenizer.ggml.pre` names (llama.cpp's `llama-vocab.cpp` list:
//!   the Llama 3, Qwen 2, GPT-2, StarCoder and BLOOM families, Mistral's
//!   Tekken, DeepSeek V3's, GPT-4o's (Llama 4), Seed-Coder's, Ling's and
//!   llama.cpp's `default`); the Llama 3 family and Tekken also take a
//!   whole-word entry before merging (`ignore_merges`) and start with bos.
//! - `llama` (SentencePiece): BPE with byte fallback whose merges are
//!   derived from `scores` (a pair merges when the joined piece is an entry;
//!   higher score first), as `LlamaConverter` does, which reproduces
//!   llama.cpp's SPM tokenizer; spaces become `▁`, one is prepended.
//! - `bert`: WordPiece, lowercasing, `[CLS] … [SEP]`.
//!
//! Control tokens are added as special tokens and user-defined ones as
//! plain added tokens, so both are matched in the text first. Any other
//! model or pre-tokenizer is refused with a message saying so.

use tokenizers::models::bpe::{self, BPE};
use tokenizers::models::wordpiece::WordPiece;
use tokenizers::normalizers::{self, BertNormalizer, NormalizerWrapper, Prepend, Replace};
use tokenizers::pre_tokenizers::bert::BertPreTokenizer;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::processors::template::TemplateProcessing;
use tokenizers::{AddedToken, PreTokenizerWrapper, SplitDelimiterBehavior, Tokenizer};

use super::Vocab;
use super::entries::Entry;
use super::gguf::{Recipe, TokenType};
use super::gguf_pre::{pre_regexes, whole_pieces_and_bos};
use super::{derived_merges, merge_fit};

/// The message for a vocabulary that cannot encode text.
fn unsupported(what: String) -> String {
    format!("cannot encode text: {what} is not supported; use --id or --token")
}

/// Builds the tokenizer of a GGUF vocabulary; the error is the message to
/// show after the file name.
pub(crate) fn build(recipe: &Recipe, vocab: &Vocab) -> Result<Tokenizer, String> {
    build_with(recipe, vocab, None)
}

/// [`build`], or with `cut` the entries it selects only (and the merges
/// among them), besides those encoding may always need (the unknown
/// token, byte pieces): a cut-down tokenizer that encodes some texts as
/// the full one does when `cut` holds every entry their encoding could
/// make (see `reach`).
pub(crate) fn build_with(
    recipe: &Recipe,
    vocab: &Vocab,
    cut: Option<&dyn Fn(&Entry) -> bool>,
) -> Result<Tokenizer, String> {
    let failed = |e: &dyn std::fmt::Display| format!("cannot build the tokenizer: {e}");
    let unk = unknown_token(recipe, vocab);
    let keep = &|e: &Entry| match cut {
        None => true,
        Some(cut) => {
            cut(e)
                || Some(e.token) == unk.as_deref()
                || vocab.token_type(e.id) == Some(TokenType::Byte)
        }
    };
    let mut tokenizer = match recipe.model.as_str() {
        "gpt2" => {
            let Some(regexes) = pre_regexes(recipe.pre.as_deref()) else {
                let pre = recipe.pre.as_deref().unwrap_or_default();
                return Err(unsupported(format!(
                    "GGUF pre-tokenizer {pre:?} (tokenizer.ggml.pre)"
                )));
            };
            let pieces = vocab_map(vocab, keep);
            // Cut down, a merge is kept when it makes a kept entry of two.
            let kept = |l: &str, r: &str| {
                cut.is_none()
                    || (pieces.contains_key(l)
                        && pieces.contains_key(r)
                        && pieces.contains_key(&format!("{l}{r}")))
            };
            let merges: Vec<(String, String)> = recipe
                .merges
                .iter()
                .filter_map(|m| m.split_once(' '))
                .filter(|(l, r)| kept(l, r))
                .map(|(l, r)| (l.to_string(), r.to_string()))
                .collect();
            let longest = vocab.entries.iter().map(|e| e.token.len()).max();
            let unfit = merges.iter().find_map(|(l, r)| {
                merge_fit::unfit(l.as_bytes(), r.as_bytes(), longest.unwrap_or(0), "")
            });
            if let Some(why) = unfit {
                return Err(failed(&why));
            }
            let ignore_merges = recipe.pre.as_deref().is_some_and(whole_pieces_and_bos);
            let model = BPE::builder()
                .vocab_and_merges(pieces, merges)
                .ignore_merges(ignore_merges)
                .build()
                .map_err(|e| failed(&e))?;
            let mut tokenizer = Tokenizer::new(model);
            let mut parts: Vec<PreTokenizerWrapper> = Vec::new();
            for regex in regexes {
                let split = Split::new(
                    SplitPattern::Regex(regex.to_string()),
                    SplitDelimiterBehavior::Isolated,
                    false,
                )
                .map_err(|e| failed(&e))?;
                parts.push(split.into());
            }
            parts.push(ByteLevel::new(false, false, false).into());
            tokenizer.with_pre_tokenizer(Some(Sequence::new(parts)));
            tokenizer
        }
        "llama" => {
            let Some(scores) = recipe.scores.as_deref() else {
                return Err(unsupported(
                    "a GGUF \"llama\" tokenizer without tokenizer.ggml.scores".to_string(),
                ));
            };
            let mut builder = BPE::builder()
                .vocab_and_merges(vocab_map(vocab, keep), score_merges(vocab, scores, keep)?)
                .byte_fallback(true)
                .fuse_unk(true);
            if let Some(unk) = unk.clone() {
                builder = builder.unk_token(unk);
            }
            let mut tokenizer = Tokenizer::new(builder.build().map_err(|e| failed(&e))?);
            let mut steps: Vec<NormalizerWrapper> = Vec::new();
            if recipe.add_space_prefix {
                steps.push(Prepend::new("▁".to_string()).into());
            }
            steps.push(Replace::new(" ", "▁").map_err(|e| failed(&e))?.into());
            tokenizer
                .with_normalizer(Some(normalizers::Sequence::new(steps)))
                .map_err(|e| failed(&e))?;
            tokenizer
        }
        "bert" => {
            let mut builder = WordPiece::builder()
                .vocab(vocab_map(vocab, keep))
                .continuing_subword_prefix("##".to_string())
                .max_input_chars_per_word(100);
            if let Some(unk) = unk.clone() {
                builder = builder.unk_token(unk);
            }
            let mut tokenizer = Tokenizer::new(builder.build().map_err(|e| failed(&e))?);
            tokenizer
                .with_normalizer(Some(BertNormalizer::new(true, true, None, true)))
                .map_err(|e| failed(&e))?;
            tokenizer.with_pre_tokenizer(Some(BertPreTokenizer));
            tokenizer
        }
        other => return Err(unsupported(format!("GGUF tokenizer model {other:?}"))),
    };

    let added = |special: bool| -> Vec<AddedToken> {
        vocab
            .added
            .iter()
            .filter(|a| {
                let e = Entry {
                    token: &a.content,
                    id: a.id,
                    added: true,
                };
                a.special == special && keep(&e)
            })
            .map(|a| AddedToken::from(a.content.clone(), special).normalized(false))
            .collect()
    };
    tokenizer
        .add_special_tokens(added(true))
        .map_err(|e| failed(&e))?;
    tokenizer.add_tokens(added(false)).map_err(|e| failed(&e))?;
    if let Some(template) = template(recipe, vocab)? {
        tokenizer.with_post_processor(Some(template));
    }
    Ok(tokenizer)
}

/// Token → id over the entries `keep` selects, resolving a string stored
/// twice as [`Vocab::id`] does (llama.cpp refuses such files): the last
/// control or user-defined entry, else the first other one.
fn vocab_map(vocab: &Vocab, keep: impl Fn(&Entry) -> bool) -> bpe::Vocab {
    // Collecting keeps the last insert: walk backwards so the first wins.
    let mut map: bpe::Vocab = vocab
        .entries
        .iter()
        .rev()
        .filter(|e| !e.added && keep(e))
        .map(|e| (e.token.to_string(), e.id))
        .collect();
    for e in vocab.entries.iter().filter(|e| e.added && keep(e)) {
        map.insert(e.token.to_string(), e.id);
    }
    map
}

/// The string of the unknown token: the declared `unknown_token_id`, else
/// the first entry of type `unknown`.
fn unknown_token(recipe: &Recipe, vocab: &Vocab) -> Option<String> {
    let id = recipe
        .id("unk")
        .and_then(|id| u32::try_from(id).ok())
        .filter(|&id| (id as usize) < vocab.size())
        .or_else(|| {
            (0..vocab.size() as u32).find(|&id| vocab.token_type(id) == Some(TokenType::Unknown))
        })?;
    vocab.token(id).map(str::to_string)
}

/// SentencePiece merges from scores, as Hugging Face's `LlamaConverter`:
/// every split of an entry into two entries is a merge, ranked by the
/// joined entry's score (highest first), then its id, then the longer
/// first part; control, byte and unused entries take no part. The splits
/// are found in time linear in the vocabulary and bounded (see
/// `derived_merges`); the error says which bound was passed.
fn score_merges(
    vocab: &Vocab,
    scores: &[f32],
    keep: &dyn Fn(&Entry) -> bool,
) -> Result<Vec<(String, String)>, String> {
    let mergeable = |e: &Entry| {
        keep(e)
            && !matches!(
                vocab.token_type(e.id),
                Some(TokenType::Control | TokenType::Byte | TokenType::Unused)
            )
    };
    let pieces = vocab_map(vocab, mergeable);
    // Each string once, at the id the map gives it.
    let held: Vec<Entry> = (vocab.entries.iter())
        .filter(|e| mergeable(e) && pieces.get(e.token) == Some(&e.id))
        .collect();
    let bytes: Vec<&[u8]> = held.iter().map(|e| e.token.as_bytes()).collect();
    let cuts = derived_merges::cuts(&bytes, 0..held.len() as u32, true)
        .map_err(|e| format!("cannot build the tokenizer: {e}"))?;
    let mut merges: Vec<(f32, u32, usize, &str, &str)> = cuts
        .iter()
        .map(|c| {
            let (e, left) = (held[c.piece as usize], held[c.left as usize].token);
            let score = scores.get(e.id as usize).copied().unwrap_or(f32::MIN);
            (score, e.id, left.len(), left, held[c.right as usize].token)
        })
        .collect();
    merges.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(b.2.cmp(&a.2)));
    Ok(merges
        .into_iter()
        .map(|(_, _, _, l, r)| (l.to_string(), r.to_string()))
        .collect())
}

/// The tokens encoding with special tokens adds, as (role, id, whether it
/// goes first): bos (BERT: cls) first, eos and separator last, each when
/// its `add_*` flag is on and its id is declared. An error when such an id
/// is outside the vocabulary.
pub(crate) fn added_specials(
    recipe: &Recipe,
    vocab: &Vocab,
) -> Result<Vec<(&'static str, u32, bool)>, String> {
    // BERT files declare the first token as `cls` (older ones as `bos`).
    let first = match recipe.id("cls") {
        Some(_) if recipe.model == "bert" => ("cls", "cls"),
        _ => ("bos", "bos"),
    };
    let wanted = [
        (first, recipe.add_bos, true),
        (("eos", "eos"), recipe.add_eos, false),
        (("sep", "seperator"), recipe.add_sep, false),
    ];
    let mut out = Vec::new();
    for ((role, key), add, before) in wanted {
        let Some(id) = recipe.id(role).filter(|_| add) else {
            continue;
        };
        let id = u32::try_from(id)
            .ok()
            .filter(|&id| (id as usize) < vocab.size())
            .ok_or_else(|| {
                format!(
                    "cannot add special tokens: metadata `tokenizer.ggml.{key}_token_id` is {id}, \
                     expected an id below the {} tokens",
                    vocab.size()
                )
            })?;
        out.push((role, id, before));
    }
    Ok(out)
}

/// The template adding [`added_specials`]; none when there are none or
/// one is out of range (encoding with special tokens then fails first).
fn template(recipe: &Recipe, vocab: &Vocab) -> Result<Option<TemplateProcessing>, String> {
    let specials = added_specials(recipe, vocab).unwrap_or_default();
    if specials.is_empty() {
        return Ok(None);
    }
    let before = specials.iter().filter(|s| s.2).map(|s| s.0);
    let after = specials.iter().filter(|s| !s.2).map(|s| s.0);
    let single: Vec<&str> = before.chain(["$A"]).chain(after).collect();
    let ids: Vec<(String, u32)> = specials.iter().map(|s| (s.0.to_string(), s.1)).collect();
    TemplateProcessing::builder()
        .try_single(single)
        .and_then(|b| b.special_tokens(ids).build().map_err(|e| e.to_string()))
        .map(Some)
        .map_err(|e| format!("cannot build the tokenizer: {e}"))
}
