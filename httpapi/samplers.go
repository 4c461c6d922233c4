package httpapi

import (
	"encoding/json"
	"strings"
)

// samplerNames maps the names llama.cpp's server accepts in "samplers" to
// its canonical ones.
var samplerNames = map[string]string{
	"dry": "dry", "top_k": "top_k", "top-k": "top_k",
	"typ_p": "typ_p", "typ-p": "typ_p", "typical_p": "typ_p", "typical-p": "typ_p", "typical": "typ_p", "typ": "typ_p",
	"top_p": "top_p", "top-p": "top_p", "nucleus": "top_p",
	"min_p": "min_p", "min-p": "min_p",
	"xtc":         "xtc",
	"temperature": "temperature", "temp": "temperature",
	"top_n_sigma": "top_n_sigma", "top-n-sigma": "top_n_sigma",
	"infill": "infill", "penalties": "penalties",
}

// samplerLetters maps llama.cpp's one-letter sampler codes to names.
var samplerLetters = map[rune]string{
	'd': "dry", 'k': "top_k", 'y': "typ_p", 'p': "top_p", 'm': "min_p",
	'x': "xtc", 't': "temperature", 's': "top_n_sigma", 'i': "infill", 'e': "penalties",
}

// parseSamplers reads "samplers": an array of sampler names or a string of
// llama.cpp's letters ("dkypmxt"). It returns canonical names; nil when
// the field is absent.
func parseSamplers(raw json.RawMessage) ([]string, error) {
	if !present(raw) {
		return nil, nil
	}
	var letters string
	if json.Unmarshal(raw, &letters) == nil {
		if len(letters) > maxSamplerStages {
			return nil, invalid("samplers", "samplers has %d letters; at most %d are allowed", len(letters), maxSamplerStages)
		}
		out := make([]string, 0, len(letters))
		for _, c := range letters {
			name, ok := samplerLetters[c]
			if !ok {
				return nil, invalid("samplers", "samplers: %q is not a sampler letter (one of dkypmxtsie)", c)
			}
			out = append(out, name)
		}
		return out, nil
	}
	names, err := stringList(raw, "samplers", maxSamplerStages, maxSamplerStages*16)
	if err != nil {
		return nil, invalid("samplers", "samplers must be an array of sampler names or a string of sampler letters")
	}
	for i, n := range names {
		canon, ok := samplerNames[strings.ToLower(n)]
		if !ok {
			return nil, invalid(elemName("samplers", i), "samplers[%d]: %q is not a sampler name", i, n)
		}
		names[i] = canon
	}
	return names, nil
}
