package grammar

import "sync"

// maxMaskBytes bounds the memory of an engine's mask cache: 1024 masks
// of the 128k-token llama-bpe vocabulary.
const maxMaskBytes = 16 << 20

// Engine joins a grammar to a vocabulary and caches what masks cost to
// compute. It is safe for concurrent use; every Matcher made from it shares
// its caches.
type Engine struct {
	g *Grammar
	v *Vocab

	mu     sync.Mutex             // guards in, tables and tw
	in     *interner              // stacks with stackRest at the bottom, for the tables
	tables map[tableKey]*posTable // top of a stack -> what it accepts
	tw     walker

	cmu      sync.RWMutex        // guards masks
	masks    map[uint64][]uint64 // state hash -> finished mask of MaskWords words
	maxMasks int                 // entries masks may hold before it is emptied
}

// tableDepth is how many nodes from the top of a stack may key a table.
// One is often not enough: inside a JSON string the top rule (one
// character) ends after every character, so its table would leave every
// token to the rest of the stack; the top three rules cover the string up
// to its closing quote. A table is keyed by as few nodes as leave at most
// maxRestTokens tokens to the rest of the stack.
const (
	tableDepth    = 4
	maxRestTokens = 4096
)

// tableKey names the top of a stack: the positions of its top nodes (-1
// past those used) and whether the stack ends there.
type tableKey struct {
	pos  [tableDepth]int32
	done bool // the stack has no nodes below those in pos
}

// posTable is what the top of a stack accepts: the tokens allowed
// whatever the rest of the stack is, and the trie nodes below which the
// rest decides.
type posTable struct {
	accepted []uint64 // [MaskWords] bitmask
	rest     []restRoot
	deeper   bool  // the rest decides too much: use the key one node deeper
	err      error // why the table could not be built
}

// keyOf returns the table key of the top depth nodes of stack id.
func keyOf(in *interner, id int32, depth int) tableKey {
	k := tableKey{pos: [tableDepth]int32{-1, -1, -1, -1}}
	for i := 0; i < depth && id > stackRest; i++ {
		k.pos[i] = in.nodes[id].pos
		id = in.nodes[id].parent
	}
	k.done = id == stackDone
	return k
}

// tableFor returns the table of stack id: the one of the fewest top nodes
// that is not marked deeper.
func (e *Engine) tableFor(in *interner, id int32) (*posTable, error) {
	for depth := 1; ; depth++ {
		t, err := e.table(keyOf(in, id, depth), depth < tableDepth)
		if err != nil || !t.deeper {
			return t, err
		}
	}
}

// NewEngine prepares g for v.
func NewEngine(g *Grammar, v *Vocab) (*Engine, error) {
	e := &Engine{g: g, v: v, in: newInterner(g), tables: map[tableKey]*posTable{}, masks: map[uint64][]uint64{}}
	e.maxMasks = max(16, maxMaskBytes/(8*v.words))
	if _, err := newInterner(g).start(stackDone); err != nil {
		return nil, err
	}
	return e, nil
}

// Vocab returns the engine's vocabulary.
func (e *Engine) Vocab() *Vocab { return e.v }

// table returns the table of a stack top, building it on first use;
// when mayDeepen, a table that leaves more than maxRestTokens to the rest
// of the stack is marked deeper instead.
func (e *Engine) table(k tableKey, mayDeepen bool) (*posTable, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t, ok := e.tables[k]; ok {
		return t, t.err
	}
	t := &posTable{accepted: make([]uint64, e.v.words)}
	top := stackRest
	if k.done {
		top = stackDone
	}
	var err error
	for i := tableDepth - 1; i >= 0 && err == nil; i-- {
		if k.pos[i] >= 0 {
			top, err = e.in.node(k.pos[i], top)
		}
	}
	if err == nil {
		e.tw.work, e.tw.restTokens, e.tw.restLimit = 0, 0, 0
		if mayDeepen && !k.done {
			e.tw.restLimit = maxRestTokens
		}
		err = e.tw.walk(e.in, e.v, 0, state{stacks: []int32{top}}, t.accepted, &t.rest)
	}
	if err == errDeepen {
		*t = posTable{deeper: true}
		err = nil
	}
	t.err = err
	e.tables[k] = t
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
