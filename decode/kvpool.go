package decode

import "slices"

// blockPool hands out the blocks of a paged KV pool and keeps full blocks
// as a prefix cache across requests, in vLLM's scheme: a full block is
// keyed by a hash of its tokens and of the key of the block before it, so
// equal keys mean equal prefixes up to and including the block. A block
// is in use while its reference count is positive; a cached block whose
// count falls to zero stays findable until it is evicted, least recently
// released first, when a fresh block is needed and no never-cached block
// is free. It is owned by the scheduler's Run goroutine.
type blockPool struct {
	size int // tokens per block

	refs   []int32          // [blocks] sequences using each block
	key    []uint64         // [blocks] prefix key of a cached block; 0: not cached
	parent []uint64         // [blocks] key of the block before a cached block (0: first block)
	toks   []int32          // [blocks*size] tokens of each cached block, checked on lookup
	byKey  map[uint64]int32 // cached block of each key
	free   []int32          // unreferenced blocks that are not cached (a stack)

	// The unreferenced cached blocks, least recently released first, as a
	// doubly linked list through prev and next (-1: none).
	prev, next []int32 // [blocks]
	head, tail int32
	lru        int // blocks in the list

	evictions uint64 // cached blocks evicted to make room
}

func newBlockPool(blocks, size int) *blockPool {
	p := &blockPool{
		size:   size,
		refs:   make([]int32, blocks),
		key:    make([]uint64, blocks),
		parent: make([]uint64, blocks),
		toks:   make([]int32, blocks*size),
		byKey:  make(map[uint64]int32),
		free:   make([]int32, blocks),
		prev:   make([]int32, blocks),
		next:   make([]int32, blocks),
		head:   -1,
		tail:   -1,
	}
	for i := range p.free {
		p.free[i] = int32(blocks - 1 - i) // block 0 is taken first
		p.prev[i], p.next[i] = -1, -1
	}
	return p
}

// blocks is the size of the pool.
func (p *blockPool) blocks() int { return len(p.refs) }

// available is the number of blocks alloc can still hand out.
func (p *blockPool) available() int { return len(p.free) + p.lru }

// cachedBlocks is the number of blocks the prefix cache can find.
func (p *blockPool) cachedBlocks() int { return len(p.byKey) }

// used is the number of blocks some sequence holds.
func (p *blockPool) used() int { return p.blocks() - p.available() }

// alloc takes a block for a sequence's new positions: a never-cached free
// block, else the least recently released cached one, which leaves the
// cache. ok is false when every block is in use.
func (p *blockPool) alloc() (b int32, ok bool) {
	switch {
	case len(p.free) > 0:
		b = p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
	case p.head >= 0:
		b = p.head
		p.unlink(b)
		p.uncache(b)
		p.evictions++
	default:
		return -1, false
	}
	p.refs[b] = 1
	return b, true
}

// retain adds a user to block b (a cached block found by lookup, or a
// block shared with another choice of the same prompt).
func (p *blockPool) retain(b int32) {
	if p.refs[b] == 0 && p.key[b] != 0 {
		p.unlink(b)
	}
	p.refs[b]++
}

// release drops a user of block b; unused, it stays cached when it is,
// else it is free.
func (p *blockPool) release(b int32) {
	p.refs[b]--
	if p.refs[b] > 0 {
		return
	}
	if p.key[b] == 0 {
		p.free = append(p.free, b)
		return
	}
	p.pushBack(b)
}

// releaseTable drops the users of a sequence's blocks, last block first,
// so that a conversation's tail is evicted before its head.
func (p *blockPool) releaseTable(table []int32) {
	for i := len(table) - 1; i >= 0; i-- {
		p.release(table[i])
	}
}

// blockKey is the prefix key of a full block of tokens after the block
// with key parent (0 for the first block): FNV-1a over both, never 0.
func blockKey(parent uint64, tokens []int32) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	mix := func(v uint64) {
		for i := 0; i < 8; i++ {
			h ^= v & 0xff
			h *= prime
			v >>= 8
		}
	}
	mix(parent)
	for _, t := range tokens {
		mix(uint64(uint32(t)))
	}
	if h == 0 {
		h = 1
	}
	return h
}

// register makes block b, full with tokens after the block keyed parent,
// findable under key, unless another block already is.
func (p *blockPool) register(b int32, key, parent uint64, tokens []int32) {
	if p.key[b] != 0 {
		return
	}
	if _, dup := p.byKey[key]; dup {
		return
	}
	p.key[b], p.parent[b] = key, parent
	copy(p.toks[int(b)*p.size:(int(b)+1)*p.size], tokens)
	p.byKey[key] = b
}

// lookup finds the cached blocks of the longest cached prefix of tokens,
// at most maxBlocks full blocks, retains them and appends them to table
// and their keys to keys.
func (p *blockPool) lookup(tokens []int32, maxBlocks int, table []int32, keys []uint64) ([]int32, []uint64) {
	var parent uint64
	for i := 0; i < maxBlocks && (i+1)*p.size <= len(tokens); i++ {
		blk := tokens[i*p.size : (i+1)*p.size]
		key := blockKey(parent, blk)
		b, ok := p.byKey[key]
		if !ok || p.parent[b] != parent || !slices.Equal(p.toks[int(b)*p.size:(int(b)+1)*p.size], blk) {
			break
		}
		p.retain(b)
		table, keys = append(table, b), append(keys, key)
		parent = key
	}
	return table, keys
}

// uncache removes block b from the prefix cache.
func (p *blockPool) uncache(b int32) {
	if p.byKey[p.key[b]] == b {
		delete(p.byKey, p.key[b])
	}
	p.key[b], p.parent[b] = 0, 0
}

func (p *blockPool) pushBack(b int32) {
	p.prev[b], p.next[b] = p.tail, -1
	if p.tail >= 0 {
		p.next[p.tail] = b
	} else {
		p.head = b
	}
	p.tail = b
	p.lru++
}

func (p *blockPool) unlink(b int32) {
	if p.prev[b] >= 0 {
		p.next[p.prev[b]] = p.next[b]
	} else {
		p.head = p.next[b]
	}
	if p.next[b] >= 0 {
		p.prev[p.next[b]] = p.prev[b]
	} else {
		p.tail = p.prev[b]
	}
	p.prev[b], p.next[b] = -1, -1
	p.lru--
}
