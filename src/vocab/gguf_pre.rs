//! The BPE pre-tokenizers of GGUF vocabularies by the names llama.cpp
//! gives them in `tokenizer.ggml.pre` (`llama-vocab.cpp`): the regexes
//! each splits text with, and which ones take a whole-word entry before
//! merging and start with bos. Read when the metadata is (the bos
//! default, see `gguf`) and when the tokenizer is built (see
//! `gguf_tokenizer`).

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
pub(super) fn pre_regexes(pre: Option<&str>) -> Option<&'static [&'static str]> {
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
pub(super) fn whole_pieces_and_bos(pre: &str) -> bool {
    is_llama3(pre) || pre == TEKKEN_NAME
}
