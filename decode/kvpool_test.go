package decode

import (
	"slices"
	"testing"
)

// fillBlocks allocates n blocks, registers them as the chain of tokens'
// full blocks and returns the table.
func fillBlocks(t *testing.T, p *blockPool, tokens []int32) []int32 {
	t.Helper()
	var table []int32
	var parent uint64
	for i := 0; (i+1)*p.size <= len(tokens); i++ {
		b, ok := p.alloc()
		if !ok {
			t.Fatalf("pool dry at block %d", i)
		}
		blk := tokens[i*p.size : (i+1)*p.size]
		key := blockKey(parent, blk)
		p.register(b, key, parent, blk)
		table, parent = append(table, b), key
	}
	return table
}

func seqTokens(n int, salt int32) []int32 {
	t := make([]int32, n)
	for i := range t {
		t[i] = int32(i)*7 + salt
	}
	return t
}

func TestBlockPoolPrefixLookup(t *testing.T) {
	p := newBlockPool(8, 4)
	a := seqTokens(12, 0)
	ta := fillBlocks(t, p, a)
	tests := []struct {
		name      string
		tokens    []int32
		maxBlocks int
		want      int // blocks found
	}{
		{"same prompt", a, 3, 3},
		{"capped", a, 2, 2},
		{"longer prompt", append(slices.Clone(a), 5, 6, 7, 8, 9), 4, 3},
		{"shorter than a block", a[:3], 3, 0},
		{"partial last block", a[:10], 3, 2},
		{"differs in block 2", append(slices.Clone(a[:8]), 99, 99, 99, 99), 3, 2},
		{"differs in block 0", append([]int32{99}, a[1:]...), 3, 0},
		{"same block 1 after another block 0", append(seqTokens(4, 1), a[4:]...), 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, keys := p.lookup(tt.tokens, tt.maxBlocks, nil, nil)
			if len(got) != tt.want || len(keys) != tt.want || !slices.Equal(got, ta[:tt.want]) {
				t.Errorf("found %v, want %v", got, ta[:tt.want])
			}
			p.releaseTable(got)
		})
	}
	for _, b := range ta {
		if p.refs[b] != 1 {
			t.Errorf("block %d has %d users after the lookups, want 1", b, p.refs[b])
		}
	}
}

// TestBlockPoolEviction checks that blocks in use are never handed out,
// that unused cached blocks are evicted least recently released first
// (a sequence's tail before its head) and only when no never-cached block
// is free, and that an evicted block is no longer found.
func TestBlockPoolEviction(t *testing.T) {
	p := newBlockPool(6, 2)
	a, b := seqTokens(6, 0), seqTokens(6, 100)
	ta := fillBlocks(t, p, a) // 3 blocks
	tb := fillBlocks(t, p, b) // 3 blocks: the pool is full
	if _, ok := p.alloc(); ok {
		t.Fatal("alloc succeeded with every block in use")
	}
	p.releaseTable(ta) // a's blocks: tail first into the LRU list
	if p.available() != 3 || p.cachedBlocks() != 6 {
		t.Fatalf("available %d, cached %d; want 3 and 6", p.available(), p.cachedBlocks())
	}
	got, ok := p.alloc()
	if !ok || got != ta[2] {
		t.Fatalf("alloc = %d, %v; want a's last block %d", got, ok, ta[2])
	}
	if p.evictions != 1 {
		t.Errorf("%d evictions, want 1", p.evictions)
	}
	if found, _ := p.lookup(a, 3, nil, nil); !slices.Equal(found, ta[:2]) {
		t.Errorf("after evicting a's tail, lookup found %v, want %v", found, ta[:2])
	} else {
		p.releaseTable(found)
	}
	if found, _ := p.lookup(b, 3, nil, nil); !slices.Equal(found, tb) {
		t.Errorf("b's blocks in use: lookup found %v, want %v", found, tb)
	} else {
		p.releaseTable(found)
	}
	// A freed never-cached block is taken before any cached one.
	p.release(got)
	if again, _ := p.alloc(); again != got || p.evictions != 1 {
		t.Errorf("alloc = %d after %d evictions; want the free block %d and no eviction", again, p.evictions, got)
	}
	for _, blk := range tb {
		if p.refs[blk] != 1 {
			t.Errorf("block %d of b has %d users, want 1", blk, p.refs[blk])
		}
	}
}

// TestBlockPoolDuplicateRegister checks that a second block with the same
// prefix stays private and is freed, not cached, when released.
func TestBlockPoolDuplicateRegister(t *testing.T) {
	p := newBlockPool(4, 2)
	toks := seqTokens(2, 3)
	first := fillBlocks(t, p, toks)
	second := fillBlocks(t, p, toks)
	if p.cachedBlocks() != 1 {
		t.Fatalf("%d cached blocks, want 1", p.cachedBlocks())
	}
	p.releaseTable(second)
	p.releaseTable(first)
	if len(p.free) != 3 || p.lru != 1 {
		t.Errorf("%d free and %d cached unused blocks, want 3 and 1", len(p.free), p.lru)
	}
}
