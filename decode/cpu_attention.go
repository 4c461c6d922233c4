package decode

import (
	"llmserve/kernels"
	"llmserve/model"
)

// attention computes softmax(cap(scale·q·K))·V for every token and head of
// the chunk over the positions of the token's sequence it sees (0..pos, or
// the last st.Window of them), spread over workers. The positions are read
// block by block through the sequence's block table: each run of positions
// inside one block is one strided kernel call over its cells.
func (e *CPUEngine) attention(l int, st *model.Step, b *Batch) {
	m, s := e.m, &e.s
	hd, qDim, group := m.HeadDim, m.Heads*m.HeadDim, m.Heads/m.KVHeads
	scale, softcap, window := st.Scale, st.Cap, st.Window
	q, att := s.bufs[model.BufQ], s.bufs[model.BufAtt]
	tasks := b.Len() * m.Heads
	workers := e.opts.Threads
	kc, vc := &e.kv.k[l], &e.kv.v[l]
	bs := e.kv.Layout.BlockSize
	e.pool.For(workers, func(lo, hi int) {
		for wk := lo; wk < hi; wk++ {
			scores := s.scores[wk*e.opts.Context : (wk+1)*e.opts.Context]
			rows := s.kvRows[wk*bs*hd : (wk+1)*bs*hd]
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
				nPos := int(b.Pos[i]) + 1 - first
				table := e.table(b, b.Seq[i])
				c0, c1 := (h/group)*hd, (h/group+1)*hd
				for p := first; p < first+nPos; {
					n := blockRun(bs, p, first+nPos-p)
					k, stride := kc.view(e.kv.cell(table, p), n, c0, c1, rows)
					kernels.Dots(scores[p-first:p-first+n], qh, k, stride)
					p += n
				}
				for p := range scores[:nPos] {
					scores[p] *= scale
				}
				if softcap > 0 {
					kernels.SoftCap(scores[:nPos], softcap)
				}
				kernels.Softmax(scores[:nPos])
				clear(out)
				for p := first; p < first+nPos; {
					n := blockRun(bs, p, first+nPos-p)
					v, stride := vc.view(e.kv.cell(table, p), n, c0, c1, rows)
					kernels.Axpys(out, scores[p-first:p-first+n], v, stride)
					p += n
				}
			}
		}
	})
}
