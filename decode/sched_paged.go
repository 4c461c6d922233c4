package decode

import "fmt"

// pagedState is the scheduler's side of a PagedEngine's KV pool: the
// blocks, the prefix cache over them and each slot's block table. It is
// owned by the Run goroutine.
type pagedState struct {
	layout   KVLayout
	pool     *blockPool
	tables   [][]int32 // [MaxSeqs] block table of each slot, passed with every step as Batch.Blocks
	noLookup bool      // take nothing from the prefix cache (SchedulerConfig.NoPrefixCache)
}

func newPagedState(e PagedEngine, slots int, noLookup bool) (*pagedState, error) {
	l := e.KVLayout()
	if l.BlockSize <= 0 || l.Blocks < l.BlocksFor(e.ContextSize()) {
		return nil, fmt.Errorf("decode: KV pool of %d blocks of %d tokens cannot hold one context of %d", l.Blocks, l.BlockSize, e.ContextSize())
	}
	return &pagedState{layout: l, pool: newBlockPool(l.Blocks, l.BlockSize), tables: make([][]int32, slots), noLookup: noLookup}, nil
}

// admitPaged gives seq, about to take a slot, the cached blocks of its
// longest cached prefix and reports whether the pool has room for the
// rest of its prefill beside the reserved blocks of sequences admitted
// before it in this turn; if not, seq keeps nothing and waits.
func (s *Scheduler) admitPaged(seq *sequence, reserved *int) bool {
	p := s.paged
	bs := p.layout.BlockSize
	need := p.layout.BlocksFor(seq.fillTo)
	seq.table, seq.keys, seq.nPast = seq.table[:0], seq.keys[:0], 0
	// A fresh prompt computes at least its last position, for its logits.
	share := (seq.fillTo - 1) / bs
	if seq.generated > 0 {
		share = seq.fillTo / bs
	}
	switch {
	case seq.waiting: // a choice that shares its leader's blocks later
		need -= share
	case !p.noLookup && !seq.req.NoPromptCache:
		seq.table, seq.keys = p.pool.lookup(seq.tokens[:seq.fillTo], share, seq.table, seq.keys)
		need -= len(seq.table)
	}
	// Beside its prompt, leave a block for each running sequence to grow
	// into, so that admitting seq does not soon preempt it again.
	if p.pool.available() < need+*reserved+len(s.active) {
		p.pool.releaseTable(seq.table)
		seq.table, seq.keys = seq.table[:0], seq.keys[:0]
		return false
	}
	*reserved += need
	seq.nPast = len(seq.table) * bs
	if seq.generated == 0 {
		s.metrics.cachedPrompt(seq.nPast)
	}
	return true
}

// sharePaged gives a waiting choice its leader's full blocks of the
// prompt, all but those holding the last position, and reports whether
// the leader has computed them yet.
func (s *Scheduler) sharePaged(seq, leader *sequence) bool {
	bs := s.paged.layout.BlockSize
	k := (len(seq.req.Prompt) - 1) / bs
	if leader.nPast < k*bs {
		return false
	}
	for _, b := range leader.table[:k] {
		s.paged.pool.retain(b)
	}
	seq.table = append(seq.table[:0], leader.table[:k]...)
	seq.keys = append(seq.keys[:0], leader.keys[:min(k, len(leader.keys))]...)
	seq.nPast = k * bs
	s.paged.tables[seq.slot] = seq.table
	s.metrics.sharedPrompt(seq.nPast)
	return true
}

// cells makes sure seq has cells for its positions nPast..nPast+n-1 and
// returns how many of them it got, from 0 to n (n for an engine that is
// not paged). When the pool is dry it preempts younger sequences that
// have no tokens in this step, youngest first: for a decode token
// (decode) until the cell is there, else, for a prefill chunk, only when
// it got no cell at all. A decode token that still gets none preempts seq
// itself.
func (s *Scheduler) cells(seq *sequence, n int, decode bool) int {
	if s.paged == nil || n <= 0 {
		return n
	}
	p := s.paged
	bs := p.layout.BlockSize
	want := p.layout.BlocksFor(seq.nPast + n)
	for len(seq.table) < want {
		b, ok := p.pool.alloc()
		if !ok {
			got := len(seq.table)*bs - seq.nPast
			if (decode || got <= 0) && s.preemptYounger(seq) {
				continue
			}
			if decode {
				s.preempt(seq)
				return 0
			}
			p.tables[seq.slot] = seq.table
			return max(0, got)
		}
		seq.table = append(seq.table, b)
	}
	p.tables[seq.slot] = seq.table
	return n
}

// preemptYounger preempts the youngest running sequence admitted after
// seq that holds blocks and has no tokens in this step; false when there
// is none.
func (s *Scheduler) preemptYounger(seq *sequence) bool {
	for i := len(s.active) - 1; i >= 0; i-- {
		q := s.active[i]
		if q == seq {
			return false
		}
		if !q.done && !q.requeued && q.chunk == 0 && len(q.table) > 0 {
			s.preempt(q)
			return true
		}
	}
	return false
}

// preempt takes seq's slot and blocks away and queues it first, to be
// recomputed when there is room again: its prompt and the tokens it has
// generated are prefilled anew (mostly from the prefix cache), and it
// goes on where it was. Its stream sees nothing of this.
func (s *Scheduler) preempt(seq *sequence) {
	s.dropBlocks(seq)
	s.slots[seq.slot] = nil
	seq.requeued = true
	seq.nPast = 0
	seq.fillTo = len(seq.req.Prompt)
	if seq.generated > 0 {
		seq.fillTo = len(seq.tokens) - 1
	}
	s.mu.Lock()
	s.queue = append(s.queue, nil)
	copy(s.queue[1:], s.queue)
	s.queue[0] = seq
	s.mu.Unlock()
	s.metrics.preempted()
}

// dropBlocks gives seq's blocks back to the pool.
func (s *Scheduler) dropBlocks(seq *sequence) {
	if s.paged == nil {
		return
	}
	s.paged.pool.releaseTable(seq.table)
	seq.table, seq.keys = seq.table[:0], seq.keys[:0]
	s.paged.tables[seq.slot] = nil
}

// commitBlocks makes every block of seq that the last step filled
// findable in the prefix cache.
func (s *Scheduler) commitBlocks(seq *sequence) {
	if s.paged == nil {
		return
	}
	bs := s.paged.layout.BlockSize
	for i := len(seq.keys); i < seq.nPast/bs && i < len(seq.table); i++ {
		var parent uint64
		if i > 0 {
			parent = seq.keys[i-1]
		}
		toks := seq.tokens[i*bs : (i+1)*bs]
		key := blockKey(parent, toks)
		s.paged.pool.register(seq.table[i], key, parent, toks)
		seq.keys = append(seq.keys, key)
	}
}

// publishKV sets the pool's gauges in the metrics.
func (s *Scheduler) publishKV() {
	if s.paged == nil {
		return
	}
	pl := s.paged.pool
	s.metrics.setKVBlocks(pl.used(), pl.cachedBlocks(), pl.evictions)
}
