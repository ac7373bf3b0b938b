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
use super::merge_fit;

/// GPT-2's split.
const GPT2: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";
/// Llama 3's split, as in its tokenizer.json.
const LLAMA3: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Mistral's Tekken split (Mistral Nemo and later), as in its
/// tokenizer.json and tekken.json (llama.cpp writes it with lookaheads
/// for `std::regex`).
const TEKKEN: &str = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Qwen 2's split: Llama 3's with single digits.
const QWEN2: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// DeepSeek V3's split (V3, R1, V3.1 and later), as in its tokenizer.json:
/// digits in runs of up to three, then runs of CJK ideographs and kana,
/// then words, punctuation and whitespace.
const DEEPSEEK3: [&str; 3] = [
    r"\p{N}{1,3}",
    "[\u{4e00}-\u{9fa5}\u{3040}-\u{309f}\u{30a0}-\u{30ff}]+",
    r##"[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"##,
];
/// GPT-4o's split (o200k; Llama 4, MiniMax M2), as in Llama 4's
/// tokenizer.json: Tekken's case runs with contractions and digits by
/// three.
const GPT4O: &str = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// BLOOM's split (also Poro and GPT-3 Finnish): runs up to whitespace
/// and a few punctuation marks.
const BLOOM: &str = r" ?[^(\s|.,!?…。，、।۔،)]+";
/// Seed-Coder's split: Qwen 2's, with no newline in a punctuation run.
const SEED_CODER: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Ling's split (BailingMoE, LLaDA-MoE), its possessive quantifiers made
/// greedy as llama.cpp runs it.
const BAILINGMOE: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+";

/// The pre-tokenizer names of the Llama 3 family, which llama.cpp encodes
/// with `ignore_merges` and a leading bos.
const LLAMA3_NAMES: [&str; 8] = [
    "llama3",
    "llama-v3",
    "llama-bpe",
    "falcon3",
    "falcon-h1",
    "pixtral",
    "midm-2.0",
    "lfm2",
];

/// Mistral's Tekken pre-tokenizer name, also encoded with `ignore_merges`
/// and a leading bos.
const TEKKEN_NAME: &str = "tekken";

/// The regexes `pre` splits text with, applied in turn (each splits the
/// pieces of the previous one, keeping matches and gaps), by the names
/// llama.cpp's `llama-vocab.cpp` gives them; `None` for the others
/// (DeepSeek LLM's and Coder's, Chameleon's, Kimi K2's, SuperBPE's ...).
fn pre_regexes(pre: Option<&str>) -> Option<&'static [&'static str]> {
    Some(match pre {
        Some(p) if is_llama3(p) => &[LLAMA3],
        Some("dbrx" | "smaug-bpe" | "chatglm-bpe" | "glm4") => &[LLAMA3],
        Some(
            "qwen2" | "deepseek-r1-qwen" | "kormo" | "stablelm2" | "megrez" | "hunyuan" | "grok-2",
        ) => &[QWEN2],
        Some(TEKKEN_NAME) => &[TEKKEN],
        Some("deepseek-v3" | "hunyuan-dense") => &DEEPSEEK3,
        Some("gpt-4o" | "llama4" | "minimax-m2") => &[GPT4O],
        Some("bloom" | "poro-chat" | "gpt3-finnish") => &[BLOOM],
        Some("viking") => &[BLOOM, r"\p{N}"],
        Some("seed-coder") => &[SEED_CODER],
        Some("bailingmoe" | "bailingmoe2" | "llada-moe") => &[BAILINGMOE],
        Some(
            "gpt-2" | "phi-2" | "jina-es" | "jina-de" | "gigachat" | "jina-v1-en" | "jina-v2-es"
            | "jina-v2-de" | "jina-v2-code" | "roberta-bpe" | "a.x-4.0" | "mellum" | "exaone4"
            | "mpt" | "olmo" | "jais" | "trillion" | "granite-docling",
        ) => &[GPT2],
        // Not a llama.cpp name, but what hand-made files write for GPT-2.
        Some("gpt2") => &[GPT2],
        Some(
            "starcoder" | "refact" | "command-r" | "smollm" | "codeshell" | "exaone" | "minerva-7b",
        ) => &[r"\p{N}", GPT2],
        Some("falcon") => &[r"[\p{P}\$\+<=>\^~\|`]+", GPT2, "[0-9][0-9][0-9]"],
        // llama.cpp's fallback when a converter did not name one.
        None | Some("default") => &[r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", "[0-9][0-9][0-9]"],
        Some(_) => return None,
    })
}

/// Whether `pre` names a pre-tokenizer of the Llama 3 family.
fn is_llama3(pre: &str) -> bool {
    LLAMA3_NAMES.contains(&pre)
}

/// Whether llama.cpp encodes with `pre` (the Llama 3 family's and
/// Tekken's) with `ignore_merges` (a piece that is an entry is taken
/// whole) and, when `tokenizer.ggml.add_bos_token` is absent, starts with
/// bos.
pub(crate) fn whole_pieces_and_bos(pre: &str) -> bool {
    is_llama3(pre) || pre == TEKKEN_NAME
}

/// The message for a vocabulary that cannot encode text.
fn unsupported(what: String) -> String {
    format!("cannot encode text: {what} is not supported; use --id or --token")
}

/// Builds the tokenizer of a GGUF vocabulary; the error is the message to
/// show after the file name.
pub(crate) fn build(recipe: &Recipe, vocab: &Vocab) -> Result<Tokenizer, String> {
    let failed = |e: &dyn std::fmt::Display| format!("cannot build the tokenizer: {e}");
    let mut tokenizer = match recipe.model.as_str() {
        "gpt2" => {
            let Some(regexes) = pre_regexes(recipe.pre.as_deref()) else {
                let pre = recipe.pre.as_deref().unwrap_or_default();
                return Err(unsupported(format!(
                    "GGUF pre-tokenizer {pre:?} (tokenizer.ggml.pre)"
                )));
            };
            let merges: Vec<(String, String)> = recipe
                .merges
                .iter()
                .filter_map(|m| m.split_once(' '))
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
                .vocab_and_merges(vocab_map(vocab, |_| true), merges)
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
                .vocab_and_merges(vocab_map(vocab, |_| true), score_merges(vocab, scores))
                .byte_fallback(true)
                .fuse_unk(true);
            if let Some(unk) = unknown_token(recipe, vocab) {
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
                .vocab(vocab_map(vocab, |_| true))
                .continuing_subword_prefix("##".to_string())
                .max_input_chars_per_word(100);
            if let Some(unk) = unknown_token(recipe, vocab) {
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
            .filter(|a| a.special == special)
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
/// joined entry's score (highest first), then its id; control, byte and
/// unused entries take no part.
fn score_merges(vocab: &Vocab, scores: &[f32]) -> Vec<(String, String)> {
    let mergeable = |e: &Entry| {
        !matches!(
            vocab.token_type(e.id),
            Some(TokenType::Control | TokenType::Byte | TokenType::Unused)
        )
    };
    let pieces = vocab_map(vocab, mergeable);
    let mut merges: Vec<(f32, u32, usize, &str, &str)> = Vec::new();
    for e in vocab.entries.iter().filter(|e| mergeable(e)) {
        if pieces.get(e.token) != Some(&e.id) {
            continue;
        }
        for (at, _) in e.token.char_indices().skip(1) {
            let (left, right) = e.token.split_at(at);
            if pieces.contains_key(left) && pieces.contains_key(right) {
                let score = scores.get(e.id as usize).copied().unwrap_or(f32::MIN);
                merges.push((score, e.id, left.len(), left, right));
            }
        }
    }
    merges.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(b.2.cmp(&a.2)));
    merges
        .into_iter()
        .map(|(_, _, _, l, r)| (l.to_string(), r.to_string()))
        .collect()
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
