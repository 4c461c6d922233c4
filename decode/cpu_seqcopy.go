package decode

import "fmt"

// CopySeq copies positions 0..n-1 of slot src's KV cache to slot dst, in
// every layer (SeqCopier).
func (e *CPUEngine) CopySeq(src, dst int32, n int) error {
	seqs, ctx := int32(e.opts.MaxSeqs), e.opts.Context
	if src < 0 || src >= seqs || dst < 0 || dst >= seqs || n < 0 || n > ctx {
		return fmt.Errorf("decode: copy %d positions from slot %d to slot %d of %d slots of %d positions", n, src, dst, seqs, ctx)
	}
	if src == dst || n == 0 {
		return nil
	}
	from, to, size := e.cacheOffset(src, 0), e.cacheOffset(dst, 0), n*e.kvDim
	for l := range e.kCache {
		copy(e.kCache[l][to:to+size], e.kCache[l][from:from+size])
		copy(e.vCache[l][to:to+size], e.vCache[l][from:from+size])
	}
	return nil
}
