//! The one integration-test binary: runs `embscope` as a user would, on the
//! fixtures in `fixtures/`, and asserts what a user would notice: exit codes,
//! JSON fields, error messages, and the text they read (snapshots).

mod check;
mod check_candidates;
mod check_training;
mod common;
mod conventions;
mod diff;
mod gguf;
mod gguf_fuzz;
mod gguf_vocab;
mod gguf_words;
mod hostile_tokenizers;
mod human;
mod info;
mod kernels;
mod lookup;
mod mismatch;
mod mistral_layout;
mod neighbors;
mod neighbors_batch;
mod normalised_words;
mod not_regular;
mod older_files;
mod ollama;
mod reach;
mod regenerate;
mod report;
mod rows;
mod safetensors_fuzz;
mod side_files;
mod sigbus;
mod similarity;
mod size;
mod tensors;
mod tokenizer_fuzz;
mod trust;
mod undertrained;
mod vocab_only;
