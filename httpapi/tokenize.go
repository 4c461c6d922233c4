package httpapi

import (
	"math"
	"net/http"
	"unicode/utf8"
)

// tokenize answers POST /tokenize {"content": TEXT, "add_special": BOOL,
// "parse_special": BOOL, "with_pieces": BOOL} with {"tokens": [...]}, as
// llama.cpp's server does: parse_special (default true) reads control
// tokens' text as those tokens; with_pieces gives each token's piece, as a
// string when it is valid UTF-8 and as its byte values otherwise.
func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	m, err := s.loaded()
	if err != nil {
		writeError(w, err)
		return
	}
	var body struct {
		Content      *string `json:"content"`
		AddSpecial   bool    `json:"add_special"`
		ParseSpecial *bool   `json:"parse_special"`
		WithPieces   bool    `json:"with_pieces"`
	}
	if err := decodeBody(r, &body); err != nil {
		writeError(w, err)
		return
	}
	if body.Content == nil {
		writeError(w, invalid("content", "content is required"))
		return
	}
	parseSpecial := body.ParseSpecial == nil || *body.ParseSpecial
	ids, err := encodeAll(m.Tokenizer, *body.Content, body.AddSpecial, parseSpecial)
	if err != nil {
		writeError(w, invalid("content", "cannot tokenize: %v", err))
		return
	}
	if !body.WithPieces {
		writeJSON(w, http.StatusOK, map[string][]int32{"tokens": ids})
		return
	}
	type piece struct {
		ID    int32 `json:"id"`
		Piece any   `json:"piece"` // string, or []int of byte values
	}
	pieces := make([]piece, len(ids))
	for i, id := range ids {
		b := m.Tokenizer.TokenBytes(id)
		pieces[i] = piece{ID: id, Piece: string(b)}
		if !utf8.Valid(b) {
			pieces[i].Piece = byteValues(b)
		}
	}
	writeJSON(w, http.StatusOK, map[string][]piece{"tokens": pieces})
}

// detokenize answers POST /detokenize {"tokens": [...]} with {"content": TEXT}.
func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) {
	m, err := s.loaded()
	if err != nil {
		writeError(w, err)
		return
	}
	var body struct {
		Tokens []int32 `json:"tokens"`
	}
	if err := decodeBody(r, &body); err != nil {
		writeError(w, err)
		return
	}
	n := int32(m.Tokenizer.VocabSize())
	for i, id := range body.Tokens {
		if id < 0 || id >= n {
			writeError(w, invalid("tokens", "tokens[%d] = %d is outside the vocabulary of %d", i, id, n))
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"content": m.Tokenizer.Decode(body.Tokens)})
}

// encodeAll tokenizes a whole text. A tokenizer that can stop early is
// asked with no limit: the same tokens, and it merges long SPM text in
// segments, in time linear in the text.
func encodeAll(tok Tokenizer, text string, addSpecial, parseSpecial bool) ([]int32, error) {
	if e, ok := tok.(atMostEncoder); ok {
		ids, _, err := e.EncodeAtMost(text, addSpecial, parseSpecial, math.MaxInt)
		return ids, err
	}
	return tok.Encode(text, addSpecial, parseSpecial)
}
