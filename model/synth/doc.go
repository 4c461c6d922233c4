// Package synth writes synthetic GGUF models: the architecture, shapes,
// metadata and tensor names of real Llama, Qwen, Gemma 2, Phi-3 and
// Mixtral models (their tensors are those model's tensor table gives the
// architecture's forward pass), with random
// weights drawn deterministically from a seed, and the tokenizer of a real
// vocabulary file. They serve tests, benchmarks and `make run` without a
// multi-gigabyte download; their text is noise.
//
// Shapes (embedding, layers, heads/KV heads, head dim, feed-forward, tied
// output, rope base, context):
//
//	llama tiny  256, 4 layers, 8/4 heads, head 32, FFN 768, tied, rope 500000 + llama3 rope_freqs
//	llama 1b    Llama-3.2-1B: 2048, 16 layers, 32/8, head 64, FFN 8192, tied, rope 500000 + rope_freqs
//	llama 8b    Llama-3.1-8B: 4096, 32 layers, 32/8, head 128, FFN 14336, output.weight, rope 500000 + rope_freqs
//	qwen2 tiny  256, 4 layers, 8/4, head 32, FFN 768, tied, rope 1e6, Q/K/V biases
//	qwen2 1b    Qwen2.5-1.5B: 1536, 28 layers, 12/2, head 128, FFN 8960, tied, rope 1e6, Q/K/V biases
//	qwen2 8b    Qwen2.5-7B: 3584, 28 layers, 28/4, head 128, FFN 18944, output.weight, rope 1e6, Q/K/V biases
//	qwen3 tiny  256, 4 layers, 8/4, head 64 (Q is 512 wide), FFN 768, tied, rope 1e6, Q/K norms
//	qwen3 1b    Qwen3-1.7B: 2048, 28 layers, 16/8, head 128, FFN 6144, tied, rope 1e6, Q/K norms
//	qwen3 8b    Qwen3-8B: 4096, 36 layers, 32/8, head 128, FFN 12288, output.weight, rope 1e6, Q/K norms
//	gemma2 tiny 256, 4 layers, 4/2, head 64, FFN 768, tied, window 64, soft-caps 50 and 30
//	gemma2 2b   Gemma-2-2B: 2304, 26 layers, 8/4, head 256, FFN 9216, tied, window 4096, soft-caps 50 and 30
//	gemma2 9b   Gemma-2-9B: 3584, 42 layers, 16/8, head 256, FFN 14336, tied, window 4096, soft-caps 50 and 30
//	phi3 tiny   256, 4 layers, 8/8, head 32, FFN 768, output.weight, fused attn_qkv and ffn_up, window 2047
//	phi3 mini   Phi-3.5-mini: 3072, 32 layers, 32/32, head 96, FFN 8192, output.weight, LongRoPE (factor 32 over 4096)
//	mixtral tiny  256, 4 layers, 8/4, head 32, expert FFN 512, 4 experts (2 per token), tied
//	mixtral 8x7b  Mixtral-8x7B: 4096, 32 layers, 32/8, head 128, expert FFN 14336, 8 experts (2 per token), output.weight
//
// The llama3 rope scaling of the llama shapes (factor 32, low-frequency
// factor 1, high-frequency factor 4, original context 8192) is stored, as
// llama.cpp's converter stores it, in a rope_freqs.weight tensor of
// per-frequency divisors. The vocabulary size is the token count of the
// vocabulary the model is given, so the embedding and output tensors follow
// it; BuiltinVocab is a 261-token byte-level vocabulary for when no
// vocabulary file is at hand.
//
// general.name is "synth-ARCH-SHAPE", and "synth Phi 3.5 SHAPE" for phi3:
// llama.cpp gives a model whose name contains "phi3" or "phi-3" the token
// attributes of Phi-3's own vocabulary and refuses it when the vocabulary
// lacks Phi-3's </s>, <unk>, <s> or <|endoftext|>; Write refuses such a
// name with such a vocabulary.
//
// Weights: matrices are N(0, 0.02), norm weights 1 + N(0, 0.02), biases
// N(0, 0.02). Each row of each tensor is drawn from its own generator,
// seeded from the model seed, the tensor name and the row index, so tensors
// are produced in parallel and in row chunks, and a file depends only on
// its options, never on the number of workers.
package synth
