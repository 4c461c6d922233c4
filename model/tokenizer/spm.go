package tokenizer

import (
	"container/heap"
	"strings"
)

// symbol is a piece of the text being merged: text[start:start+n], linked
// to its neighbours by index (-1 at either end). n becomes 0 once the symbol
// has been merged into its left neighbour.
type symbol struct {
	prev, next int
	start, n   int
}

// spmBigram is a candidate merge of two neighbouring symbols.
type spmBigram struct {
	left, right int
	score       float32
	size        int // bytes of the merged text when the candidate was made
}

// spmQueue pops the highest score first, and of equal scores the leftmost.
type spmQueue []spmBigram

func (q spmQueue) Len() int { return len(q) }
func (q spmQueue) Less(i, j int) bool {
	if q[i].score != q[j].score {
		return q[i].score > q[j].score
	}
	return q[i].left < q[j].left
}
func (q spmQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *spmQueue) Push(x any)   { *q = append(*q, x.(spmBigram)) }
func (q *spmQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// spmSession merges one fragment, like llama.cpp's llm_tokenizer_spm_session.
type spmSession struct {
	t        *Tokenizer
	text     string
	symbols  []symbol
	queue    spmQueue
	revMerge map[string][2]int // merged text -> the two symbols it was made from
}

// encodeSPM appends the tokens of text (spaces already escaped) to out.
func (t *Tokenizer) encodeSPM(text string, out []int32) []int32 {
	s := spmSession{t: t, text: text, revMerge: map[string][2]int{}}
	for offs := 0; offs < len(text); {
		n := min(utf8Len(text[offs]), len(text)-offs)
		next := len(s.symbols) + 1
		if offs+n == len(text) {
			next = -1
		}
		s.symbols = append(s.symbols, symbol{prev: len(s.symbols) - 1, next: next, start: offs, n: n})
		offs += n
	}
	for i := 1; i < len(s.symbols); i++ {
		s.tryAddBigram(i-1, i)
	}
	for s.queue.Len() > 0 {
		b := heap.Pop(&s.queue).(spmBigram)
		left, right := &s.symbols[b.left], &s.symbols[b.right]
		if left.n == 0 || right.n == 0 || left.n+right.n != b.size {
			continue // one side was merged since the candidate was made
		}
		left.n += right.n
		right.n = 0
		left.next = right.next
		if right.next >= 0 {
			s.symbols[right.next].prev = b.left
		}
		s.tryAddBigram(left.prev, b.left)
		s.tryAddBigram(b.left, left.next)
	}
	for i := 0; i != -1 && len(s.symbols) > 0; i = s.symbols[i].next {
		out = s.resegment(i, out)
	}
	return out
}

func (s *spmSession) symText(i int) string {
	sym := s.symbols[i]
	return s.text[sym.start : sym.start+sym.n]
}

func (s *spmSession) tryAddBigram(left, right int) {
	if left == -1 || right == -1 {
		return
	}
	l, r := s.symbols[left], s.symbols[right]
	text := s.text[l.start : l.start+l.n+r.n]
	id, ok := s.t.ids[text]
	if !ok {
		return
	}
	heap.Push(&s.queue, spmBigram{left: left, right: right, score: s.t.score(id), size: len(text)})
	s.revMerge[text] = [2]int{left, right}
}

// resegment emits symbol i as a token, or splits it back into the symbols
// it was merged from, or (for text no token covers) into byte tokens.
func (s *spmSession) resegment(i int, out []int32) []int32 {
	text := s.symText(i)
	if id, ok := s.t.ids[text]; ok {
		return append(out, id)
	}
	if p, ok := s.revMerge[text]; ok {
		out = s.resegment(p[0], out)
		return s.resegment(p[1], out)
	}
	for j := 0; j < len(text); j++ {
		out = append(out, s.t.byteToken(text[j]))
	}
	return out
}

// escapeSpaces replaces every space with ▁ (U+2581), as SentencePiece does.
func escapeSpaces(s string) string { return strings.ReplaceAll(s, " ", "\u2581") }
