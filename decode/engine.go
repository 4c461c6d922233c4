// Package decode owns the token loop: the KV cache, forward steps over a
// batch of sequences, sampling, and the scheduler that runs continuous
// batching over a fixed number of sequence slots. With a PagedEngine the
// slots draw their KV cells from one pool of blocks (KVLayout, cellOf),
// shared between requests with a common prefix (blockPool); other engines
// keep one fixed region per slot.
package decode

import "fmt"

// Batch is the input of one forward step, in the style of llama_decode:
// token i of the batch is Tokens[i], placed at position Pos[i] of sequence
// Seq[i]. A sequence may contribute several tokens (a prefill chunk, in
// position order) or one (a decode step). Logits[i] says whether the logits
// after token i are wanted.
type Batch struct {
	Tokens []int32 // [n] token ids
	Pos    []int32 // [n] position of each token in its sequence
	Seq    []int32 // [n] sequence slot of each token, 0 <= Seq[i] < MaxSeqs
	Logits []bool  // [n] whether to return logits for token i
	// Blocks, for a PagedEngine, is the block table of every sequence
	// slot ([MaxSeqs][blocks]): position p of sequence s lives in block
	// Blocks[s][p/BlockSize]. Nil: each slot uses its own fixed blocks.
	Blocks [][]int32
}

// Len is the number of tokens in the batch.
func (b *Batch) Len() int { return len(b.Tokens) }

// Reset empties the batch, keeping its capacity.
func (b *Batch) Reset() {
	b.Tokens, b.Pos, b.Seq, b.Logits = b.Tokens[:0], b.Pos[:0], b.Seq[:0], b.Logits[:0]
}

// Add appends one token.
func (b *Batch) Add(token, pos, seq int32, logits bool) {
	b.Tokens = append(b.Tokens, token)
	b.Pos = append(b.Pos, pos)
	b.Seq = append(b.Seq, seq)
	b.Logits = append(b.Logits, logits)
}

// Engine runs forward steps of one model over a KV cache that holds up to
// MaxSeqs sequences of up to ContextSize positions each.
//
// Attention of a token at position p of sequence s covers positions 0..p of
// s: the cache entries for earlier positions must have been written by
// earlier steps (or earlier tokens of the same batch).
type Engine interface {
	// Forward runs one step. For each token with Logits set, in batch order,
	// it writes VocabSize logits into consecutive rows of out, which must
	// hold at least that many rows.
	Forward(b *Batch, out []float32) error
	// VocabSize is the number of logits per token.
	VocabSize() int
	// ContextSize is the number of positions each sequence may use.
	ContextSize() int
	// MaxSeqs is the number of sequence slots in the KV cache.
	MaxSeqs() int
	// Close releases the engine's resources.
	Close() error
}

// PagedEngine is an Engine whose KV cache is a paged pool (KVLayout):
// every step's Batch carries the block tables of its sequences, which the
// scheduler draws from the pool, shares between sequences with a common
// prefix and keeps as a prefix cache across requests. Engines that are not
// paged keep one fixed region per slot.
type PagedEngine interface {
	Engine
	// KVLayout describes the pool the block tables index.
	KVLayout() KVLayout
}

// Pick says how an engine that implements Picker picks the token after a
// row of logits: greedy at Temperature ≤ 0, else top-k, top-p, min-p and
// temperature in that order, then the first candidate whose cumulative
// probability passes U (best first after top-k or top-p, in token order
// otherwise), as Sampler does. With a Mask, the tokens it does not allow
// count as -Inf before all of that (NaN as -Inf, +Inf as the largest
// float, as the host's constrained pick reads them).
type Pick struct {
	Temperature float32
	TopK        int
	TopP, MinP  float32
	U           float32 // the uniform draw in [0, 1)
	// Mask, when not nil, holds maskWords(VocabSize) words: bit i%64 of
	// word i/64 set where token i is allowed. Only a MaskPicker whose
	// PicksMasks is true applies it; it aliases the sampler's buffer until
	// the sampler's next Pick or Sample.
	Mask []uint64
}

// Picker is an Engine that picks tokens where the logits are, so that only
// token ids cross to the host.
type Picker interface {
	Engine
	// ForwardPick runs one step like Forward. For the r-th token with
	// Logits set it picks a token with picks[r] into toks[r]; where
	// picks[r] is nil, or the engine cannot apply it (a Mask without
	// PicksMasks among them), toks[r] is -1 and the row's logits are copied
	// to logits[r*VocabSize:], so that the caller picks on the host.
	ForwardPick(b *Batch, picks []*Pick, toks []int32, logits []float32) error
}

// MaskPicker is a Picker that may also apply a constraint's mask where the
// logits are (Pick.Mask), so that a constrained row costs the host its
// mask and nothing else.
type MaskPicker interface {
	Picker
	// PicksMasks reports whether ForwardPick applies Pick.Mask. When it
	// does, a masked row none of whose allowed tokens has a finite logit
	// gets -1 (and its logits, which may hold -Inf where the mask bans a
	// token: the host's pick under the same mask reads them the same).
	PicksMasks() bool
}

// check validates b against an engine's vocabulary, context and slots, and
// the logits buffer out against the rows b asks for.
func (b *Batch) check(vocab, context, maxSeqs int, out []float32) error {
	n := b.Len()
	if len(b.Pos) != n || len(b.Seq) != n || len(b.Logits) != n {
		return fmt.Errorf("decode: batch slices differ in length")
	}
	for i := 0; i < n; i++ {
		switch {
		case b.Tokens[i] < 0 || int(b.Tokens[i]) >= vocab:
			return fmt.Errorf("decode: token %d is outside the vocabulary of %d", b.Tokens[i], vocab)
		case b.Pos[i] < 0 || int(b.Pos[i]) >= context:
			return fmt.Errorf("decode: position %d is outside the context of %d", b.Pos[i], context)
		case b.Seq[i] < 0 || int(b.Seq[i]) >= maxSeqs:
			return fmt.Errorf("decode: sequence %d is outside the %d slots", b.Seq[i], maxSeqs)
		}
	}
	if want := b.wanted(); len(out) < want*vocab {
		return fmt.Errorf("decode: logits buffer holds %d values, need %d", len(out), want*vocab)
	}
	return nil
}

// wanted is the number of tokens whose logits are wanted.
func (b *Batch) wanted() int {
	n := 0
	for _, l := range b.Logits {
		if l {
			n++
		}
	}
	return n
}

// chunks runs step over consecutive chunks of b of at most size tokens, in
// order; step returns how many rows of vocab logits it wrote to out, and the
// next chunk writes after them.
func (b *Batch) chunks(size, vocab int, out []float32, step func(chunk *Batch, out []float32) (int, error)) error {
	for lo := 0; lo < b.Len(); lo += size {
		hi := min(lo+size, b.Len())
		chunk := Batch{Tokens: b.Tokens[lo:hi], Pos: b.Pos[lo:hi], Seq: b.Seq[lo:hi], Logits: b.Logits[lo:hi], Blocks: b.Blocks}
		rows, err := step(&chunk, out)
		if err != nil {
			return err
		}
		out = out[rows*vocab:]
	}
	return nil
}

// Progress receives how many of total bytes of weights an engine has loaded.
type Progress func(done, total int64)
