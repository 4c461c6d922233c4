// Package tokenizer turns text into token ids and back for GGUF models, with
// the behaviour of llama.cpp's tokenizers:
//
//   - "llama": SentencePiece BPE. Spaces become ▁, a space is put before the
//     text (tokenizer.ggml.add_space_prefix) and again after every special
//     token, neighbouring pieces are merged best score first, and text no
//     token covers falls back to <0xXX> byte tokens (the unknown token when
//     the vocabulary has no byte token).
//   - "gpt2": byte-level BPE. The pre-tokenizer named by tokenizer.ggml.pre
//     splits the text into words (llama-bpe/llama3, qwen2, gpt-2, mpt,
//     falcon, starcoder, refact, smaug-bpe, dbrx, deepseek-llm,
//     deepseek-coder, gpt-4o, tekken, bloom and more; an unknown name is an
//     error), each word is spelled in GPT-2's byte code and merged by rank.
//
// Special tokens: user-defined tokens are always taken whole from the text;
// control tokens (<|eot_id|>, <s>, ...) only when Encode is asked to parse
// them, otherwise their text is tokenized like any other.
//
// Decoding: TokenBytes gives the raw bytes of any token (control tokens give
// their text). Decode and StreamDecoder render control and unknown tokens as
// nothing, as llama.cpp's token_to_piece does with special=false; the stream
// decoder holds back the bytes of an incomplete UTF-8 character until the
// tokens that complete it arrive.
//
// A Vocab holds what a vocabulary is made of (tokens, scores, types, merges,
// special ids and flags); VocabFromMetadata reads one from GGUF metadata
// (FromGGUF and Load wrap it) and New builds the Tokenizer from it.
package tokenizer
