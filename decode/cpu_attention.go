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
// f16 or q8_0 cache widened to f32 rows that are kept for the next task of
// the same sequence and KV head.
func (e *CPUEngine) attention(l int, st *model.Step, b *Batch) {
	m, s := e.m, &e.s
	hd, qDim, group := m.HeadDim, m.Heads*m.HeadDim, m.Heads/m.KVHeads
	scale, softcap, window := st.Scale, st.Cap, st.Window
	q, att := s.bufs[model.BufQ], s.bufs[model.BufAtt]
	n := b.Len()
	tasks := n * m.Heads
	workers := e.opts.Threads
	kc, vc := &e.kv.k[l], &e.kv.v[l]
	bs, ctx := e.kv.Layout.BlockSize, e.opts.Context
	inPlace := kc.typ == KVF32 && vc.typ == KVF32
	e.pool.For(workers, func(lo, hi int) {
		for wk := lo; wk < hi; wk++ {
			scores := s.scores[wk*ctx : (wk+1)*ctx]
			w := widenedRows{seq: -1}
			if !inPlace {
				w.k = s.kvRows[2*wk*ctx*hd : (2*wk+1)*ctx*hd]
				w.v = s.kvRows[(2*wk+1)*ctx*hd : (2*wk+2)*ctx*hd]
			}
			// Tasks run KV head by KV head, then token by token, then
			// over the query heads that share the KV head, so that one
			// worker reads the same cached rows task after task.
			for task := wk * tasks / workers; task < (wk+1)*tasks/workers; task++ {
				kvh, rem := task/(n*group), task%(n*group)
				i, h := rem/group, kvh*group+rem%group
				qh := q[i*qDim+h*hd : i*qDim+(h+1)*hd]
				out := att[i*qDim+h*hd : i*qDim+(h+1)*hd]
				first, last := 0, int(b.Pos[i])
				if window > 0 {
					first = max(0, last+1-window)
				}
				nPos := last + 1 - first
				table := e.table(b, b.Seq[i])
				c0, c1 := kvh*hd, (kvh+1)*hd
				if inPlace {
					for p := first; p <= last; {
						r := blockRun(bs, p, last+1-p)
						kernels.Dots(scores[p-first:p-first+r], qh, kc.rows(e.kv.cell(table, p), r, c0, c1), kc.dim)
						p += r
					}
				} else {
					w.cover(e, kc, vc, table, b.Seq[i], kvh, first, last)
					kernels.Dots(scores[:nPos], qh, w.k[first*hd:(last+1)*hd], hd)
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
					kernels.Axpys(out, scores[:nPos], w.v[first*hd:(last+1)*hd], hd)
					continue
				}
				for p := first; p <= last; {
					r := blockRun(bs, p, last+1-p)
					kernels.Axpys(out, scores[p-first:p-first+r], vc.rows(e.kv.cell(table, p), r, c0, c1), vc.dim)
					p += r
				}
			}
		}
	})
}

// widenedRows is one worker's f32 copy of the K and V rows of one
// sequence's KV head, positions lo..hi-1, row p at p*HeadDim.
type widenedRows struct {
	k, v   []float32 // [Context*HeadDim]
	seq    int32     // the sequence slot; -1: none yet
	kvh    int       // the KV head
	lo, hi int       // positions held
}

// cover makes the rows hold positions first..last of sequence seq's KV
// head kvh, widening only those it lacks. Within one layer's attention the
// cells do not change: the chunk's rows were stored before it.
func (w *widenedRows) cover(e *CPUEngine, kc, vc *kvCells, table []int32, seq int32, kvh, first, last int) {
	if w.seq != seq || w.kvh != kvh || first < w.lo || first > w.hi {
		w.seq, w.kvh, w.lo, w.hi = seq, kvh, first, first
	}
	hd, bs := e.m.HeadDim, e.kv.Layout.BlockSize
	c0, c1 := kvh*hd, (kvh+1)*hd
	for p := w.hi; p <= last; {
		r := blockRun(bs, p, last+1-p)
		cell := e.kv.cell(table, p)
		kc.widen(cell, r, c0, c1, w.k[p*hd:])
		vc.widen(cell, r, c0, c1, w.v[p*hd:])
		p += r
	}
	w.hi = max(w.hi, last+1)
}
