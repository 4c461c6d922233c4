package httpapi

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// parsePrompts reads "prompt": a string, an array of token ids, or an
// array whose elements are strings or arrays of token ids (one prompt
// each). Text is tokenized with tok. n is the choices asked per prompt:
// prompts × n must fit what the scheduler can ever hold, checked before
// any prompt is tokenized. Errors name the element: "prompt[3]".
func parsePrompts(raw json.RawMessage, tok Tokenizer, lim limits, n int) ([][]int32, error) {
	if !present(raw) {
		return nil, invalid("prompt", "prompt is required")
	}
	raw = bytes.TrimSpace(raw)
	const forms = "prompt must be a string, an array of token ids, or an array of strings and arrays of token ids"
	switch raw[0] {
	case '"':
		ids, err := encodePrompt("prompt", raw, tok, lim)
		if err != nil {
			return nil, err
		}
		return [][]int32{ids}, nil
	case '[':
	default:
		return nil, invalid("prompt", forms)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, invalid("prompt", forms)
	}
	if len(elems) == 0 {
		return nil, invalid("prompt", "prompt is an empty array")
	}
	if first := bytes.TrimSpace(elems[0]); len(first) > 0 && first[0] != '"' && first[0] != '[' {
		ids, err := tokenIDs("prompt", elems, lim)
		if err != nil {
			return nil, err
		}
		return [][]int32{ids}, nil
	}
	if len(elems)*n > lim.capacity {
		param := "prompt"
		if n > 1 {
			param = "n"
		}
		return nil, invalid(param, "%d prompts with n = %d make %d generations, but this server holds at most %d requests at once",
			len(elems), n, len(elems)*n, lim.capacity)
	}
	out := make([][]int32, len(elems))
	for i, e := range elems {
		param := elemName("prompt", i)
		e = bytes.TrimSpace(e)
		var err error
		switch {
		case len(e) > 0 && e[0] == '"':
			out[i], err = encodePrompt(param, e, tok, lim)
		case len(e) > 0 && e[0] == '[':
			var ids []json.RawMessage
			if json.Unmarshal(e, &ids) != nil {
				return nil, invalid(param, "%s must be a string or an array of token ids", param)
			}
			if len(ids) == 0 {
				return nil, invalid(param, "%s is an empty array", param)
			}
			out[i], err = tokenIDs(param, ids, lim)
		default:
			return nil, invalid(param, "%s must be a string or an array of token ids", param)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// encodePrompt tokenizes one prompt string (raw JSON), refusing before any
// tokenizing a text whose length alone proves it cannot fit the context.
func encodePrompt(param string, raw json.RawMessage, tok Tokenizer, lim limits) ([]int32, error) {
	if !jsonTextValid(raw) {
		return nil, invalid(param, "%s is not valid UTF-8", param)
	}
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		return nil, invalid(param, "%s must be a string", param)
	}
	if err := fitsByLength(param, len(text), tok, lim); err != nil {
		return nil, err
	}
	return encodeFitting(param, text, true, tok, lim)
}

// tokenIDs reads an array of token ids: each an integer inside the
// vocabulary, fewer in all than the context holds.
func tokenIDs(param string, elems []json.RawMessage, lim limits) ([]int32, error) {
	if len(elems) >= lim.ctx {
		return nil, tooLong(param, "%s has %d tokens but the context holds %d, including at least one generated token", param, len(elems), lim.ctx)
	}
	ids := make([]int32, len(elems))
	for j, e := range elems {
		id, err := strconv.ParseInt(string(bytes.TrimSpace(e)), 10, 32)
		if err != nil {
			return nil, invalid(elemName(param, j), "%s must be a token id, not %s", elemName(param, j), e)
		}
		if id < 0 || id >= int64(lim.vocab) {
			return nil, invalid(elemName(param, j), "%s: token %d is outside the vocabulary of %d", elemName(param, j), id, lim.vocab)
		}
		ids[j] = int32(id)
	}
	return ids, nil
}
