// Package tokenizer turns text into token ids and back for GGUF models, with
// the behaviour of llama.cpp's tokenizers: SentencePiece BPE ("llama": merges
// chosen by token score, byte fallback, ▁ for spaces) and byte-level BPE
// ("gpt2": ranked merges over GPT-2 byte-encoded words, split first by the
// pre-tokenizer named in tokenizer.ggml.pre).
//
// A Vocab holds what a vocabulary is made of (tokens, scores, types, merges,
// special ids and flags); VocabFromMetadata reads one from GGUF metadata and
// New builds the Tokenizer that encodes and decodes with it.
package tokenizer
