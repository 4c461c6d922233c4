package grammar

import "sync"

// maxMaskBytes bounds the memory of an engine's mask cache.
const maxMaskBytes = 64 << 20

// Engine joins a grammar to a vocabulary and caches what masks cost to
// compute. It is safe for concurrent use; every Matcher made from it shares
// its caches.
type Engine struct {
	g *Grammar
	v *Vocab

	mu     sync.Mutex          // guards in, tables and tw
	in     *interner           // stacks with stackRest at the bottom, for the tables
	tables map[int32]*posTable // grammar position -> what it accepts
	tw     walker

	cmu      sync.RWMutex        // guards masks
	masks    map[uint64][]uint64 // state hash -> finished mask of MaskWords words
	maxMasks int                 // entries masks may hold before it is emptied
}

// posTable is what a grammar position accepts: the tokens allowed from it
// whatever the rest of the stack is, and the trie nodes below which the
// rest decides.
type posTable struct {
	accepted []uint64 // [MaskWords] bitmask
	rest     []restRoot
	err      error // why the table could not be built
}

// NewEngine prepares g for v.
func NewEngine(g *Grammar, v *Vocab) (*Engine, error) {
	e := &Engine{g: g, v: v, in: newInterner(g), tables: map[int32]*posTable{}, masks: map[uint64][]uint64{}}
	e.maxMasks = max(16, maxMaskBytes/(8*v.words))
	if _, err := newInterner(g).start(stackDone); err != nil {
		return nil, err
	}
	return e, nil
}

// Vocab returns the engine's vocabulary.
func (e *Engine) Vocab() *Vocab { return e.v }

// table returns the table of grammar position pos, building it on first use.
func (e *Engine) table(pos int32) (*posTable, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t, ok := e.tables[pos]; ok {
		return t, t.err
	}
	t := &posTable{accepted: make([]uint64, e.v.words)}
	top, err := e.in.node(pos, stackRest)
	if err == nil {
		e.tw.work = 0
		err = e.tw.walk(e.in, e.v, 0, state{stacks: []int32{top}}, t.accepted, &t.rest)
	}
	t.err = err
	e.tables[pos] = t
	return t, err
}

// cached returns the cached mask of a state hash, or nil.
func (e *Engine) cached(h uint64) []uint64 {
	e.cmu.RLock()
	defer e.cmu.RUnlock()
	return e.masks[h]
}

// store caches mask under h, emptying the cache when it is full.
func (e *Engine) store(h uint64, mask []uint64) {
	e.cmu.Lock()
	defer e.cmu.Unlock()
	if len(e.masks) >= e.maxMasks {
		clear(e.masks)
	}
	e.masks[h] = mask
}

// Warm builds the tables of every position of the grammar, so that no
// request pays for them. It returns the first error a table met.
func (e *Engine) Warm() error {
	for pos, el := range e.g.elems {
		if el.kind == elemChar {
			if _, err := e.table(int32(pos)); err != nil {
				return err
			}
		}
	}
	return nil
}
