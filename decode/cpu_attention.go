package decode

import (
	"llmserve/kernels"
	"llmserve/model"
)

// attention computes softmax(cap(scale·q·K))·V for every token and head of
// the chunk over the positions of the token's sequence it sees (0..pos, or
// the last st.Window of them), spread over workers. The positions are read
// through the sequence's block table: an f32 cache in place, each run of
// positions inside one block one strided kernel call over its cells; an
// f16 or q8_0 cache widened to f32 once per token and KV head, for all the
// query heads that share it.
func (e *CPUEngine) attention(l int, st *model.Step, b *Batch) {
	m, s := e.m, &e.s
	hd, qDim, group := m.HeadDim, m.Heads*m.HeadDim, m.Heads/m.KVHeads
	scale, softcap, window := st.Scale, st.Cap, st.Window
	q, att := s.bufs[model.BufQ], s.bufs[model.BufAtt]
	tasks := b.Len() * m.Heads
	workers := e.opts.Threads
	kc, vc := &e.kv.k[l], &e.kv.v[l]
	bs, ctx := e.kv.Layout.BlockSize, e.opts.Context
	inPlace := kc.typ == KVF32 && vc.typ == KVF32
	e.pool.For(workers, func(lo, hi int) {
		for wk := lo; wk < hi; wk++ {
			scores := s.scores[wk*ctx : (wk+1)*ctx]
			var kRows, vRows []float32
			if !inPlace {
				kRows = s.kvRows[2*wk*ctx*hd : (2*wk+1)*ctx*hd]
				vRows = s.kvRows[(2*wk+1)*ctx*hd : (2*wk+2)*ctx*hd]
			}
			widened := -1 // task/group of the rows in kRows, vRows
			// Contiguous tasks keep the query heads that share a KV head
			// on one worker, so the cached rows are read once.
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
				if !inPlace && widened != task/group {
					for p := first; p < first+nPos; {
						n := blockRun(bs, p, first+nPos-p)
						cell := e.kv.cell(table, p)
						kc.widen(cell, n, c0, c1, kRows[(p-first)*hd:])
						vc.widen(cell, n, c0, c1, vRows[(p-first)*hd:])
						p += n
					}
					widened = task / group
				}
				if inPlace {
					for p := first; p < first+nPos; {
						n := blockRun(bs, p, first+nPos-p)
						kernels.Dots(scores[p-first:p-first+n], qh, kc.rows(e.kv.cell(table, p), n, c0, c1), kc.dim)
						p += n
					}
				} else {
					kernels.Dots(scores[:nPos], qh, kRows[:nPos*hd], hd)
				}
				for p := range scores[:nPos] {
					scores[p] *= scale
				}
				if softcap > 0 {
					kernels.SoftCap(scores[:nPos], softcap)
				}
				kernels.Softmax(scores[:nPos])
				clear(out)
				if !inPlace {
					kernels.Axpys(out, scores[:nPos], vRows[:nPos*hd], hd)
					continue
				}
				for p := first; p < first+nPos; {
					n := blockRun(bs, p, first+nPos-p)
					kernels.Axpys(out, scores[p-first:p-first+n], vc.rows(e.kv.cell(table, p), n, c0, c1), vc.dim)
					p += n
				}
			}
		}
	})
}
