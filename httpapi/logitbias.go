package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// parseLogitBias reads "logit_bias" in OpenAI's form {"ID": BIAS, ...} or
// llama.cpp's list form [[ID, BIAS], ...]. A bias is a number between
// -maxLogitBiasAbs and maxLogitBiasAbs, or false (llama.cpp: ban the
// token). There are at most as many entries as the vocabulary has tokens,
// and every id lies inside it. nil when the field is absent or empty.
func parseLogitBias(raw json.RawMessage, vocab int) (map[int32]float32, error) {
	if !present(raw) {
		return nil, nil
	}
	raw = bytes.TrimSpace(raw)
	var (
		keys []string // token ids as sent
		vals []json.RawMessage
	)
	switch raw[0] {
	case '{':
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, invalid("logit_bias", "logit_bias must be an object of token ids to numbers")
		}
		for k, v := range obj {
			keys, vals = append(keys, k), append(vals, v)
		}
	case '[':
		var pairs [][]json.RawMessage
		if err := json.Unmarshal(raw, &pairs); err != nil {
			return nil, invalid("logit_bias", "logit_bias as a list must hold [token id, bias] pairs")
		}
		for i, pair := range pairs {
			if len(pair) != 2 {
				return nil, invalid(elemName("logit_bias", i), "logit_bias[%d] must be a [token id, bias] pair", i)
			}
			if t := bytes.TrimSpace(pair[0]); len(t) > 0 && t[0] == '"' {
				return nil, invalid(elemName("logit_bias", i), "logit_bias[%d]: a token given as text is not supported yet; give its id", i)
			}
			keys, vals = append(keys, string(bytes.TrimSpace(pair[0]))), append(vals, pair[1])
		}
	default:
		return nil, invalid("logit_bias", "logit_bias must be an object or a list of [token id, bias] pairs")
	}
	if len(keys) > vocab {
		return nil, invalid("logit_bias", "logit_bias has %d entries but the vocabulary only %d tokens", len(keys), vocab)
	}
	if len(keys) == 0 {
		return nil, nil
	}
	out := make(map[int32]float32, len(keys))
	for i, k := range keys {
		id, err := strconv.ParseInt(k, 10, 32)
		if err != nil {
			return nil, invalid("logit_bias", "logit_bias keys must be token ids, not %q", k)
		}
		if id < 0 || id >= int64(vocab) {
			return nil, invalid("logit_bias", "logit_bias: token %d is outside the vocabulary of %d", id, vocab)
		}
		b, err := biasValue(vals[i])
		if err != nil {
			return nil, invalid("logit_bias", "logit_bias of token %d: %v", id, err)
		}
		out[int32(id)] = b
	}
	return out, nil
}

// biasValue reads one bias: a bounded finite number, or false for a ban.
func biasValue(raw json.RawMessage) (float32, error) {
	raw = bytes.TrimSpace(raw)
	if bytes.Equal(raw, []byte("false")) {
		return float32(math.Inf(-1)), nil
	}
	if len(raw) == 0 || !(raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')) {
		return 0, fmt.Errorf("the bias must be a number or false, not %s", raw)
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("the bias %s is not a finite number", raw)
	}
	if v < -maxLogitBiasAbs || v > maxLogitBiasAbs {
		return 0, fmt.Errorf("the bias must be between %d and %d (got %s)", -maxLogitBiasAbs, maxLogitBiasAbs, raw)
	}
	return float32(v), nil
}
