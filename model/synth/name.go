package synth

import (
	"fmt"
	"strings"

	"llmserve/gguf"
)

// modelName is the general.name of a synthetic model of an architecture
// at a shape: "synth-ARCH-SHAPE", except for phi3, whose name is spelled
// the way llama.cpp's converter titles Phi-3.5-mini-instruct ("Phi 3.5
// Mini Instruct"): "synth Phi 3.5 SHAPE". A name containing "phi3" or
// "phi-3" would make llama.cpp apply Phi-3's token attributes (see
// checkNameQuirks), which our vocabularies cannot take.
func modelName(arch, shape string) string {
	if arch == "phi3" {
		return "synth Phi 3.5 " + shape
	}
	return "synth-" + arch + "-" + shape
}

// phi3NameMarks are the substrings of a lower-cased general.name on which
// llama.cpp (llama_vocab::impl::load) sets the token attributes of Phi-3's
// SentencePiece vocabulary, and phi3Tokens the tokens it then looks up by
// text: it fails to load a model whose vocabulary lacks any of them.
var (
	phi3NameMarks = []string{"phi3", "phi-3"}
	phi3Tokens    = []string{"</s>", "<unk>", "<s>", "<|endoftext|>"}
)

// checkNameQuirks returns an error if llama.cpp would refuse a model named
// name with vocabulary v because the name selects token attributes of a
// vocabulary v is not: a Phi-3 name with a vocabulary (Llama 3's, the
// built-in one) that lacks Phi-3's </s>, <unk>, <s> or <|endoftext|>.
func checkNameQuirks(name string, v *gguf.File) error {
	lower := strings.ToLower(name)
	marked := false
	for _, m := range phi3NameMarks {
		marked = marked || strings.Contains(lower, m)
	}
	if !marked {
		return nil
	}
	tokens, err := v.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return fmt.Errorf("synth: vocabulary: %w", err)
	}
	have := make(map[string]bool, len(phi3Tokens))
	for _, t := range tokens {
		have[t] = true
	}
	for _, t := range phi3Tokens {
		if !have[t] {
			return fmt.Errorf("synth: general.name %q makes llama.cpp look up Phi-3's token %q, which the vocabulary lacks (llama.cpp would refuse the file)", name, t)
		}
	}
	return nil
}
