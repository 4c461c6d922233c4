package decode

// TensorDump receives a named intermediate of a forward step: the values
// of one token (name as llama.cpp names it, "blk.3.attn_norm"; pos and seq
// of the token). values is only valid during the call.
type TensorDump func(name string, pos, seq int32, values []float32)

// SetTensorDump has every later step hand each named intermediate to fn
// (nil: none). Dumping is for debugging: it costs a call per step and token.
func (e *CPUEngine) SetTensorDump(fn TensorDump) { e.dump = fn }

// dumpRows hands the n rows of width w of buf to the dump, row r being
// token rowTok[r] of b (token r when rowTok is nil).
func (e *CPUEngine) dumpRows(name string, buf []float32, w, n int, b *Batch, rowTok []int) {
	if e.dump == nil {
		return
	}
	for r := 0; r < n; r++ {
		i := r
		if rowTok != nil {
			i = rowTok[r]
		}
		e.dump(name, b.Pos[i], b.Seq[i], buf[r*w:(r+1)*w])
	}
}
