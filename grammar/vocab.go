package grammar

import (
	"bytes"
	"fmt"
	"slices"
)

// Vocab is a vocabulary as the matcher sees it: each token's bytes in a
// trie, and the tokens that end generation. It is immutable and safe for
// concurrent use; build it once per model.
type Vocab struct {
	n     int      // vocabulary size: ids 0..n-1
	bytes [][]byte // [n] bytes of each token; nil for tokens a grammar never allows
	end   []int32  // tokens that end generation, allowed when the grammar is complete
	words int      // len of a mask: (n+63)/64

	// The trie in preorder: node 0 is the root (the empty prefix); the
	// subtree of node i is nodes [i, nodeEnd[i]).
	nodeByte  []byte  // [nodes] the byte that leads into the node
	nodeDepth []int32 // [nodes] length of the node's prefix
	nodeEnd   []int32 // [nodes] one past the last node of the subtree
	nodeTok   []int32 // [nodes] index into toks of the first token with the node's prefix
	nodeOwn   []int32 // [nodes] how many tokens are exactly the prefix: toks[nodeTok[i]:nodeTok[i]+nodeOwn[i]]
	toks      []int32 // token ids sorted by their bytes
}

// NewVocab builds a Vocab of n tokens. bytesOf gives a token's bytes, or
// nil for a token no grammar may produce (control tokens); end lists the
// end-of-generation tokens.
func NewVocab(n int, bytesOf func(id int32) []byte, end []int32) (*Vocab, error) {
	if n <= 0 {
		return nil, fmt.Errorf("grammar: vocabulary of %d tokens", n)
	}
	v := &Vocab{n: n, bytes: make([][]byte, n), words: (n + 63) / 64}
	for id := range n {
		if b := bytesOf(int32(id)); len(b) > 0 {
			v.bytes[id] = slices.Clone(b)
			v.toks = append(v.toks, int32(id))
		}
	}
	for _, id := range end {
		if id < 0 || int(id) >= n {
			return nil, fmt.Errorf("grammar: end token %d outside a vocabulary of %d", id, n)
		}
		v.bytes[id] = nil // an end token stands for the end, never for text
		v.end = append(v.end, id)
	}
	v.toks = slices.DeleteFunc(v.toks, func(id int32) bool { return v.bytes[id] == nil })
	slices.SortStableFunc(v.toks, func(a, b int32) int { return bytes.Compare(v.bytes[a], v.bytes[b]) })
	v.buildTrie()
	return v, nil
}

// buildTrie lays out the trie of v.toks in preorder.
func (v *Vocab) buildTrie() {
	v.addNode(0, 0, 0)
	path := []int32{0} // open nodes from the root down
	var prev []byte
	for i, id := range v.toks {
		b := v.bytes[id]
		common := 0
		for common < len(prev) && common < len(b) && prev[common] == b[common] {
			common++
		}
		for len(path) > common+1 {
			v.nodeEnd[path[len(path)-1]] = int32(len(v.nodeByte))
			path = path[:len(path)-1]
		}
		for d := common; d < len(b); d++ {
			path = append(path, int32(len(v.nodeByte)))
			v.addNode(b[d], int32(d+1), int32(i))
		}
		prev = b
	}
	for _, p := range path {
		v.nodeEnd[p] = int32(len(v.nodeByte))
	}
	v.nodeOwn = make([]int32, len(v.nodeByte))
	for i := range v.nodeByte {
		// Sorted tokens equal to a prefix come first among those that extend it.
		if int(v.nodeTok[i]) >= len(v.toks) || i == 0 {
			continue
		}
		prefix := v.bytes[v.toks[v.nodeTok[i]]][:v.nodeDepth[i]]
		for _, id := range v.toks[v.nodeTok[i]:] {
			if !bytes.Equal(v.bytes[id], prefix) {
				break
			}
			v.nodeOwn[i]++
		}
	}
}

// addNode appends a trie node whose first token (if any) is toks[tok].
func (v *Vocab) addNode(b byte, depth, tok int32) {
	v.nodeByte = append(v.nodeByte, b)
	v.nodeDepth = append(v.nodeDepth, depth)
	v.nodeEnd = append(v.nodeEnd, 0)
	v.nodeTok = append(v.nodeTok, tok)
}

// Size returns the number of tokens.
func (v *Vocab) Size() int { return v.n }

// MaskWords returns the length of a mask for v: one bit per token.
func (v *Vocab) MaskWords() int { return v.words }

// isEnd reports whether tok ends generation.
func (v *Vocab) isEnd(tok int32) bool { return slices.Contains(v.end, tok) }
