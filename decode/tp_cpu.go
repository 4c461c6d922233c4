package decode

import (
	"fmt"

	"llmserve/kernels"
	"llmserve/model"
)

// TPCPUEngine runs a model split over ranks as model.TPPlan describes, on
// the CPU: one CPUEngine per rank holding only its shard (its heads, KV
// cache, feed-forward columns and vocabulary rows), the ranks stepping
// through the pass in lockstep with an in-process all-reduce (a sum in
// rank order) after every step the plan says reduces. It is the reference
// a multi-GPU engine is tested against, not a fast path: the ranks run one
// after the other.
type TPCPUEngine struct {
	plan  *model.TPPlan
	ranks []*CPUEngine
	vocab int // the whole model's vocabulary

	sum    []float32   // [MaxBatch, Embd] the all-reduce's accumulator
	logits [][]float32 // [rank][MaxBatch, VocabSpan(rank).Len()] each rank's logits
}

// NewTPCPUEngine splits m over ranks ranks, each a CPU engine with opts.
func NewTPCPUEngine(m *model.Model, ranks int, opts CPUOptions) (*TPCPUEngine, error) {
	plan, err := model.PlanTP(&m.Config, ranks)
	if err != nil {
		return nil, err
	}
	if err := plan.Check(m); err != nil {
		return nil, err
	}
	t := &TPCPUEngine{plan: plan, vocab: m.Vocab}
	for r := range ranks {
		s, err := plan.Shard(m, r)
		if err != nil {
			t.Close()
			return nil, err
		}
		e, err := NewCPUEngine(s, opts)
		if err != nil {
			t.Close()
			return nil, fmt.Errorf("decode: rank %d: %w", r, err)
		}
		t.ranks = append(t.ranks, e)
	}
	B := t.ranks[0].opts.MaxBatch
	t.sum = make([]float32, B*m.Embd)
	for r := range ranks {
		t.logits = append(t.logits, make([]float32, B*plan.VocabSpan(r).Len()))
	}
	return t, nil
}

// Plan is the split the engine runs.
func (t *TPCPUEngine) Plan() *model.TPPlan { return t.plan }

// VocabSize is the whole model's number of logits per token.
func (t *TPCPUEngine) VocabSize() int { return t.vocab }

// ContextSize is the number of positions per sequence.
func (t *TPCPUEngine) ContextSize() int { return t.ranks[0].ContextSize() }

// MaxSeqs is the number of sequence slots.
func (t *TPCPUEngine) MaxSeqs() int { return t.ranks[0].MaxSeqs() }

// Close stops every rank's workers.
func (t *TPCPUEngine) Close() error {
	for _, e := range t.ranks {
		e.Close()
	}
	return nil
}

// Forward runs one step over b on every rank and gathers the ranks'
// vocabulary spans into whole rows of out; see Engine.
func (t *TPCPUEngine) Forward(b *Batch, out []float32) error {
	if err := b.check(t.vocab, t.ContextSize(), t.MaxSeqs(), out); err != nil {
		return err
	}
	for _, e := range t.ranks {
		if err := e.checkTables(b); err != nil {
			return err
		}
	}
	return b.chunks(t.ranks[0].opts.MaxBatch, t.vocab, out, func(c *Batch, out []float32) (int, error) {
		rows, err := t.step(c)
		if err != nil {
			return 0, err
		}
		for r := range t.ranks {
			sp := t.plan.VocabSpan(r)
			w := sp.Len()
			for i := range rows {
				copy(out[i*t.vocab+sp.Lo:i*t.vocab+sp.Hi], t.logits[r][i*w:(i+1)*w])
			}
		}
		return rows, nil
	})
}

// ForwardGreedy runs one step over b like Forward and, for each token with
// Logits set, writes into toks the greedy pick made across the ranks from
// each rank's own best logit, without gathering the logits.
func (t *TPCPUEngine) ForwardGreedy(b *Batch, toks []int32) error {
	if len(b.Logits) != b.Len() {
		return fmt.Errorf("decode: batch slices differ in length")
	}
	// The tokens, positions and slots are checked as Forward checks them;
	// no logits buffer is needed.
	probe := Batch{Tokens: b.Tokens, Pos: b.Pos, Seq: b.Seq, Logits: make([]bool, b.Len())}
	if err := probe.check(t.vocab, t.ContextSize(), t.MaxSeqs(), nil); err != nil {
		return err
	}
	if n := b.wanted(); len(toks) < n {
		return fmt.Errorf("decode: %d token slots for %d picks", len(toks), n)
	}
	for _, e := range t.ranks {
		if err := e.checkTables(b); err != nil {
			return err
		}
	}
	parts := make([]ShardBest, len(t.ranks))
	size := t.ranks[0].opts.MaxBatch
	for lo := 0; lo < b.Len(); lo += size {
		hi := min(lo+size, b.Len())
		chunk := Batch{Tokens: b.Tokens[lo:hi], Pos: b.Pos[lo:hi], Seq: b.Seq[lo:hi], Logits: b.Logits[lo:hi], Blocks: b.Blocks}
		rows, err := t.step(&chunk)
		if err != nil {
			return err
		}
		for i := range rows {
			for r := range t.ranks {
				sp := t.plan.VocabSpan(r)
				w := sp.Len()
				parts[r] = BestOfShard(t.logits[r][i*w:(i+1)*w], sp.Lo)
			}
			toks[i] = MergeBest(parts)
		}
		toks = toks[rows:]
	}
	return nil
}

// step runs a chunk through every rank and leaves each rank's logits of
// its vocabulary span in t.logits; it returns the number of logit rows.
func (t *TPCPUEngine) step(b *Batch) (int, error) {
	n, embd := b.Len(), t.plan.Config.Embd
	for r, e := range t.ranks {
		sp := t.plan.VocabSpan(r)
		x := e.s.bufs[model.BufX][:n*embd]
		for i, tok := range b.Tokens {
			row := x[i*embd : (i+1)*embd]
			if int(tok) < sp.Lo || int(tok) >= sp.Hi {
				clear(row)
				continue
			}
			if err := kernels.Row(e.w.global[model.TokEmbd].mat, int(tok)-sp.Lo, row); err != nil {
				return 0, fmt.Errorf("decode: rank %d: token_embd: %w", r, err)
			}
		}
	}
	t.allReduce(model.BufX, n)
	g := &t.ranks[0].m.Graph
	if err := t.run(g.Input, -1, n, b); err != nil {
		return 0, err
	}
	for l := range g.Blocks {
		if err := t.run(g.Blocks[l], l, n, b); err != nil {
			return 0, err
		}
	}
	rows := 0
	for i := range n {
		if !b.Logits[i] {
			continue
		}
		for _, e := range t.ranks {
			copy(e.s.bufs[model.BufRows][rows*embd:(rows+1)*embd], e.s.bufs[model.BufX][i*embd:(i+1)*embd])
			e.s.rowTok[rows] = i
		}
		rows++
	}
	if rows == 0 {
		return 0, nil
	}
	for r, e := range t.ranks {
		for i := range e.m.Graph.Output {
			st := &e.m.Graph.Output[i]
			if err := e.exec(st, -1, &e.w.global, rows, b, t.logits[r]); err != nil {
				return 0, fmt.Errorf("decode: rank %d: %s: %w", r, st.Name, err)
			}
		}
	}
	return rows, nil
}

// run executes steps on every rank in turn (block layer, -1 outside the
// blocks), all-reducing the output of each step the plan says reduces.
// Every rank's pass has the same steps: the plan's shards differ in
// widths, never in structure.
func (t *TPCPUEngine) run(steps []model.Step, layer, n int, b *Batch) error {
	for i := range steps {
		for r, e := range t.ranks {
			ws := &e.w.global
			if layer >= 0 {
				ws = &e.w.layers[layer]
			}
			st := &e.m.Graph.Input
			if layer >= 0 {
				st = &e.m.Graph.Blocks[layer]
			}
			if err := e.exec(&(*st)[i], layer, ws, n, b, nil); err != nil {
				return fmt.Errorf("decode: rank %d: blk.%d: %s: %w", r, layer, steps[i].Name, err)
			}
		}
		if t.plan.Reduces(&steps[i]) {
			t.allReduce(steps[i].Out, n)
		}
	}
	return nil
}

// allReduce replaces buffer id's first n rows on every rank by their sum
// over the ranks, added in rank order.
func (t *TPCPUEngine) allReduce(id model.Buf, n int) {
	w := t.ranks[0].m.BufWidth(id)
	sum := t.sum[:n*w]
	copy(sum, t.ranks[0].s.bufs[id][:n*w])
	for _, e := range t.ranks[1:] {
		kernels.Add(sum, e.s.bufs[id][:n*w])
	}
	for _, e := range t.ranks {
		copy(e.s.bufs[id][:n*w], sum)
	}
}
