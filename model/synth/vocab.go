package synth

import (
	"bytes"
	"fmt"
	"strings"

	"llmserve/gguf"
)

// tokenizerPrefix starts every tokenizer metadata key.
const tokenizerPrefix = "tokenizer."

// vocabSize returns the number of tokens of a vocabulary file.
func vocabSize(v *gguf.File) (int, error) {
	tokens, err := v.Array("tokenizer.ggml.tokens")
	if err != nil {
		return 0, fmt.Errorf("synth: vocabulary: %w", err)
	}
	if tokens.Len() == 0 {
		return 0, fmt.Errorf("synth: vocabulary has no tokens")
	}
	return tokens.Len(), nil
}

// copyTokenizer copies every tokenizer.* key of v, in its order.
func copyTokenizer(w *gguf.Writer, v *gguf.File) {
	for _, kv := range v.KV {
		if strings.HasPrefix(kv.Key, tokenizerPrefix) {
			w.Set(kv.Key, kv.Value)
		}
	}
}

// builtinSpecials are the special tokens of BuiltinVocab, after the 256
// byte tokens: Llama 3's, so that its chat template applies.
var builtinSpecials = []string{"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"}

// builtinChatTemplate is Llama 3's chat template.
const builtinChatTemplate = "{% set loop_messages = messages %}{% for message in loop_messages %}" +
	"{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}" +
	"{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}" +
	"{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"

// BuiltinVocab returns a small byte-level BPE vocabulary (tokenizer model
// gpt2, pre-tokenizer llama-bpe) as a metadata-only GGUF file: the 256 byte
// tokens in GPT-2's byte-to-unicode spelling, in byte order and without
// merges, so every byte is one token, then Llama 3's five special tokens
// <|begin_of_text|> (256, BOS), <|end_of_text|>, <|start_header_id|>,
// <|end_header_id|> and <|eot_id|> (260, EOS), and Llama 3's chat template.
func BuiltinVocab() (*gguf.File, error) {
	tokens := make([]string, 0, 256+len(builtinSpecials))
	types := make([]int32, 0, cap(tokens))
	for b := range 256 {
		tokens = append(tokens, string(byteRune(byte(b))))
		types = append(types, 1) // normal
	}
	for _, s := range builtinSpecials {
		tokens = append(tokens, s)
		types = append(types, 3) // control
	}
	var buf bytes.Buffer
	w := gguf.NewWriter(&buf)
	w.SetString("tokenizer.ggml.model", "gpt2")
	w.SetString("tokenizer.ggml.pre", "llama-bpe")
	w.SetStrings("tokenizer.ggml.tokens", tokens)
	w.SetInt32s("tokenizer.ggml.token_type", types)
	w.SetStrings("tokenizer.ggml.merges", []string{})
	w.SetUint32("tokenizer.ggml.bos_token_id", 256)
	w.SetUint32("tokenizer.ggml.eos_token_id", 260)
	w.SetBool("tokenizer.ggml.add_bos_token", true)
	w.SetString("tokenizer.chat_template", builtinChatTemplate)
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("synth: built-in vocabulary: %w", err)
	}
	return gguf.Parse(buf.Bytes())
}

// byteRune is GPT-2's printable stand-in for a byte: printable Latin-1
// bytes stand for themselves, the others for code points from U+0100 on,
// in byte order.
func byteRune(b byte) rune {
	printable := func(c int) bool {
		return ('!' <= c && c <= '~') || (0xA1 <= c && c <= 0xAC) || (0xAE <= c && c <= 0xFF)
	}
	if printable(int(b)) {
		return rune(b)
	}
	n := 0
	for c := range int(b) {
		if !printable(c) {
			n++
		}
	}
	return rune(256 + n)
}
