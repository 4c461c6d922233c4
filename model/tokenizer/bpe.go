package tokenizer

import (
	"container/heap"
	"math"
	"strings"
)

// mergePair is the key of a BPE merge: the texts of the two sides.
type mergePair struct{ left, right string }

// parseMerges maps each merge "left right" to its rank (its index; the first
// occurrence wins). The split is at the first space after the first byte,
// so that a left side may itself be a space; a line without one is recorded
// under the empty pair, as llama.cpp does.
func parseMerges(merges []string) map[mergePair]int32 {
	ranks := make(map[mergePair]int32, len(merges))
	for i, m := range merges {
		var p mergePair
		if len(m) > 1 {
			if j := strings.IndexByte(m[1:], ' '); j >= 0 {
				p = mergePair{m[:j+1], m[j+2:]}
			}
		}
		if _, dup := ranks[p]; !dup {
			ranks[p] = int32(i)
		}
	}
	return ranks
}

// bpeBigram is a candidate merge of two neighbouring symbols.
type bpeBigram struct {
	left, right int
	rank        int32
	size        int // bytes of the merged text when the candidate was made
}

// bpeQueue pops the lowest rank first, and of equal ranks the leftmost.
type bpeQueue []bpeBigram

func (q bpeQueue) Len() int { return len(q) }
func (q bpeQueue) Less(i, j int) bool {
	if q[i].rank != q[j].rank {
		return q[i].rank < q[j].rank
	}
	return q[i].left < q[j].left
}
func (q bpeQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *bpeQueue) Push(x any)   { *q = append(*q, x.(bpeBigram)) }
func (q *bpeQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// bpeSession holds the buffers of one Encode call, reused across words.
type bpeSession struct {
	t       *Tokenizer
	word    string
	symbols []symbol
	queue   bpeQueue
	buf     []byte
}

// encodeBPE appends the tokens of one raw-text fragment to out, like
// llama.cpp's llm_tokenizer_bpe_session.
func (t *Tokenizer) encodeBPE(text string, out []int32) []int32 {
	return t.encodeBPEAtMost(text, out, math.MaxInt)
}

// encodeWord merges one byte-encoded word and appends its tokens.
func (s *bpeSession) encodeWord(word string, out []int32) []int32 {
	s.word = word
	s.symbols = s.symbols[:0]
	s.queue = s.queue[:0]
	if s.t.pre.ignoreMerges {
		if id, ok := s.t.ids[word]; ok {
			return append(out, id)
		}
	}
	for offs := 0; offs < len(word); {
		n := min(utf8Len(word[offs]), len(word)-offs)
		next := len(s.symbols) + 1
		if offs+n == len(word) {
			next = -1
		}
		s.symbols = append(s.symbols, symbol{prev: len(s.symbols) - 1, next: next, start: offs, n: n})
		offs += n
	}
	for i := 1; i < len(s.symbols); i++ {
		s.addBigram(i-1, i)
	}
	for s.queue.Len() > 0 {
		b := heap.Pop(&s.queue).(bpeBigram)
		left, right := &s.symbols[b.left], &s.symbols[b.right]
		// Symbols only grow until merged away, so an unchanged total size
		// means both sides are as they were when the candidate was made.
		if left.n == 0 || right.n == 0 || left.n+right.n != b.size {
			continue
		}
		left.n += right.n
		right.n = 0
		left.next = right.next
		if right.next >= 0 {
			s.symbols[right.next].prev = b.left
		}
		s.addBigram(left.prev, b.left)
		s.addBigram(b.left, left.next)
	}
	for _, sym := range s.symbols {
		if sym.n == 0 {
			continue
		}
		text := word[sym.start : sym.start+sym.n]
		if id, ok := s.t.ids[text]; ok {
			out = append(out, id)
			continue
		}
		// No token for this piece: emit the tokens of its single bytes
		// where they exist (llama.cpp drops the others).
		for j := 0; j < len(text); j++ {
			if id, ok := s.t.ids[text[j:j+1]]; ok {
				out = append(out, id)
			}
		}
	}
	return out
}

func (s *bpeSession) addBigram(left, right int) {
	if left == -1 || right == -1 {
		return
	}
	l, r := s.symbols[left], s.symbols[right]
	rank, ok := s.t.ranks[mergePair{s.word[l.start : l.start+l.n], s.word[r.start : r.start+r.n]}]
	if !ok {
		return
	}
	heap.Push(&s.queue, bpeBigram{left: left, right: right, rank: rank, size: l.n + r.n})
}
