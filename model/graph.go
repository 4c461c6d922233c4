package model

// Op is what a step computes.
type Op uint8

const (
	OpNorm      Op = iota // Out = RMSNorm(In)·W over chunks of len(W) (per head when W is HeadDim wide)
	OpMatMul              // Out = W·In (+ Bias)
	OpSplit               // Out = In[Offset : Offset+width(Out)] of every row (views of a fused product)
	OpRope                // Out (= In) rotated by the token's position, per head
	OpAttention           // Att = softmax(Scale·Q·Kᵀ, capped, windowed)·V after storing K and V in the cache
	OpGLU                 // Out = Act(In)·In2; with In2 == NoBuf, In holds gate then up
	OpAdd                 // Out += In
	OpScale               // Out (= In) ·= Scale
	OpSoftCap             // Out (= In) = Cap·tanh(In/Cap)
	OpMoE                 // Out = Σ over the Used experts the router picks of weight·FFN_e(In)
)

var opNames = [...]string{"norm", "matmul", "split", "rope", "attention", "glu", "add", "scale", "softcap", "moe"}

func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return "op?"
}

// Buf names an activation buffer: one row per token of the step (per
// logits row for BufRows and BufLogits). BufWidth gives a row's width.
type Buf uint8

const (
	NoBuf     Buf = iota
	BufX          // [Embd] the residual stream
	BufCur        // [Embd] a sub-block's input or output
	BufQ          // [Heads·HeadDim]
	BufK          // [KVHeads·HeadDim]
	BufV          // [KVHeads·HeadDim]
	BufQKV        // [(Heads+2·KVHeads)·HeadDim] fused Q/K/V product
	BufAtt        // [Heads·HeadDim] attention output
	BufGate       // [FFN]
	BufUp         // [FFN]
	BufGateUp     // [2·FFN] fused gate/up product
	BufRows       // [Embd] the residual rows whose logits are wanted
	BufLogits     // [Vocab] the caller's logits
	NumBufs
)

// BufWidth is the number of values in one row of b.
func (c *Config) BufWidth(b Buf) int {
	switch b {
	case BufX, BufCur, BufRows:
		return c.Embd
	case BufQ, BufAtt:
		return c.Heads * c.HeadDim
	case BufK, BufV:
		return c.KVHeads * c.HeadDim
	case BufQKV:
		return (c.Heads + 2*c.KVHeads) * c.HeadDim
	case BufGate, BufUp:
		return c.FFN
	case BufGateUp:
		return 2 * c.FFN
	case BufLogits:
		return c.Vocab
	}
	return 0
}

// Act is the activation of a gated feed-forward.
type Act uint8

const (
	ActSiLU     Act = iota // x·sigmoid(x) (SwiGLU)
	ActGELUTanh            // GELU, tanh approximation (GeGLU)
)

// Step is one named operation of a forward pass. Name is llama.cpp's name
// of its result (blk.N. is prefixed for a block's steps), so that dumps of
// both line up.
type Step struct {
	Op      Op
	Name    string
	In, In2 Buf // inputs; In2 only for OpGLU
	Out     Buf
	W, Bias TensorID // weight (norm, matmul, MoE router) and optional bias

	Offset  int         // OpSplit: first value of In taken
	Neox    bool        // OpRope: rotate pairs (i, i+d/2) instead of (2i, 2i+1)
	Scale   float32     // OpScale: the factor; OpAttention: the logit scale
	Cap     float32     // OpSoftCap and OpAttention: soft-capping bound, 0 = none
	Window  int         // OpAttention: attend to the last Window positions only, 0 = all
	Act     Act         // OpGLU and OpMoE
	Experts [3]TensorID // OpMoE: gate, up and down expert matrices
	Used    int         // OpMoE: experts per token
}

// Graph is a model's forward pass: steps on the embedded tokens, each
// block's steps, then the steps on the rows whose logits are wanted
// (gathered from BufX into BufRows, ending in BufLogits).
type Graph struct {
	Globals []TensorID // the global tensors the pass reads
	Input   []Step
	Blocks  [][]Step // [layer]
	Output  []Step
}

// tensors returns the tensors the block steps read.
func blockTensors(steps []Step) []TensorID {
	var ids []TensorID
	for _, s := range steps {
		for _, id := range append([]TensorID{s.W, s.Bias}, s.Experts[:]...) {
			if id != NoTensor {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// Buffers reports which buffers the pass uses.
func (g *Graph) Buffers() [NumBufs]bool {
	var used [NumBufs]bool
	mark := func(steps []Step) {
		for _, s := range steps {
			used[s.In], used[s.In2], used[s.Out] = true, true, true
			if s.Op == OpAttention {
				used[BufQ], used[BufK], used[BufV], used[BufAtt] = true, true, true, true
			}
			if s.Op == OpMoE {
				used[BufGate], used[BufUp] = true, true
			}
		}
	}
	mark(g.Input)
	for _, b := range g.Blocks {
		mark(b)
	}
	mark(g.Output)
	used[NoBuf], used[BufX], used[BufRows] = false, true, true
	return used
}
