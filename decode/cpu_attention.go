package decode

import (
	"llmserve/kernels"
	"llmserve/model"
)

// attention computes softmax(cap(scale·q·K))·V for every token and head of
// the chunk over the positions of the token's sequence it sees (0..pos, or
// the last st.Window of them), spread over workers.
func (e *CPUEngine) attention(l int, st *model.Step, b *Batch) {
	m, s := e.m, &e.s
	hd, qDim, group := m.HeadDim, m.Heads*m.HeadDim, m.Heads/m.KVHeads
	scale, softcap, window := st.Scale, st.Cap, st.Window
	q, att := s.bufs[model.BufQ], s.bufs[model.BufAtt]
	tasks := b.Len() * m.Heads
	workers := e.opts.Threads
	kc, vc := e.kCache[l], e.vCache[l]
	e.pool.For(workers, func(lo, hi int) {
		for wk := lo; wk < hi; wk++ {
			scores := s.scores[wk*e.opts.Context : (wk+1)*e.opts.Context]
			// Contiguous tasks keep the query heads that share a KV head
			// on one worker, so the cached rows are read once from memory.
			for task := wk * tasks / workers; task < (wk+1)*tasks/workers; task++ {
				i, h := task/m.Heads, task%m.Heads
				qh := q[i*qDim+h*hd : i*qDim+(h+1)*hd]
				out := att[i*qDim+h*hd : i*qDim+(h+1)*hd]
				first := 0
				if window > 0 {
					first = max(0, int(b.Pos[i])+1-window)
				}
				base := e.cacheOffset(b.Seq[i], int32(first)) + (h/group)*hd
				nPos := int(b.Pos[i]) + 1 - first
				span := (nPos-1)*e.kvDim + hd
				kernels.Dots(scores[:nPos], qh, kc[base:base+span], e.kvDim)
				for p := range scores[:nPos] {
					scores[p] *= scale
				}
				if softcap > 0 {
					kernels.SoftCap(scores[:nPos], softcap)
				}
				kernels.Softmax(scores[:nPos])
				clear(out)
				kernels.Axpys(out, scores[:nPos], vc[base:base+span], e.kvDim)
			}
		}
	})
}
