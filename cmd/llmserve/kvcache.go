package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"llmserve/decode"
)

// kvMemoryFlag parses --kv-memory: a byte count with an optional K, M, G
// or T suffix (powers of 1024; "KiB", "MB" and the like read the same) into
// size, or a share of the available memory such as "40%" into share.
func kvMemoryFlag(size *int64, share *float64) func(string) error {
	return func(v string) error {
		if p, ok := strings.CutSuffix(strings.TrimSpace(v), "%"); ok {
			f, err := strconv.ParseFloat(p, 64)
			if err != nil || f <= 0 || f > 100 {
				return fmt.Errorf("%q: want a share of the available memory from 0%% to 100%%", v)
			}
			*size, *share = 0, f/100
			return nil
		}
		*share = 0
		return sizeFlag(size)(v)
	}
}

// sizeFlag parses a byte count with an optional K, M, G or T suffix
// (powers of 1024; "KiB", "MB" and the like read the same).
func sizeFlag(dst *int64) func(string) error {
	return func(v string) error {
		s := strings.ToUpper(strings.TrimSpace(v))
		s = strings.TrimSuffix(strings.TrimSuffix(s, "B"), "I")
		shift := 0
		if n := len(s); n > 0 {
			if i := strings.IndexByte("KMGT", s[n-1]); i >= 0 {
				shift, s = 10*(i+1), s[:n-1]
			}
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f <= 0 || f*float64(int64(1)<<shift) >= 1<<62 {
			return fmt.Errorf("%q: want a positive size in bytes, with an optional K, M, G or T suffix", v)
		}
		*dst = int64(f * float64(int64(1)<<shift))
		return nil
	}
}

// logKVCache logs the KV cache's memory at start-up: per token, per slot
// at the full context and for the whole pool, when the engine is paged.
// kvCacheDesc names eng's KV cache for a report: the paged pool's cell
// types, or one region per slot.
func kvCacheDesc(eng decode.Engine) string {
	pe, ok := eng.(decode.PagedEngine)
	if !ok {
		return "one f32 region per slot"
	}
	l := pe.KVLayout()
	return fmt.Sprintf("paged pool of %s keys, %s values, %d-token blocks", l.K, l.V, l.BlockSize)
}

func logKVCache(log zerolog.Logger, eng decode.Engine, ctxSize int) {
	pe, ok := eng.(decode.PagedEngine)
	if !ok {
		return
	}
	l := pe.KVLayout()
	log.Info().Str("cache_type_k", l.K.String()).Str("cache_type_v", l.V.String()).
		Int64("bytes_per_token", l.BytesPerToken()).Int64("bytes_per_slot", l.BytesPerToken()*int64(ctxSize)).
		Int64("pool_bytes", l.PoolBytes()).Int("blocks", l.Blocks).Int("block_tokens", l.BlockSize).
		Int("pool_tokens", l.Tokens()).Msg("KV cache: paged pool with prefix cache")
}
