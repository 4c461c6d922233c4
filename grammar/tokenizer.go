package grammar

import "llmserve/model/tokenizer"

// VocabOf builds the Vocab of a tokenizer: every token but control and
// unknown ones stands for its bytes, and the end-of-generation tokens end
// the grammar.
func VocabOf(t *tokenizer.Tokenizer) (*Vocab, error) {
	n := t.VocabSize()
	var end []int32
	for id := range int32(n) {
		if t.IsEOG(id) {
			end = append(end, id)
		}
	}
	return NewVocab(n, func(id int32) []byte {
		if t.IsControl(id) {
			return nil
		}
		return t.TokenBytes(id)
	}, end)
}
