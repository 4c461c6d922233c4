package model

import "fmt"

// TensorID names one weight tensor of a model: a global one (token_embd,
// output_norm...) or one that every block may hold (attn_q, ffn_up...).
// tensorTable gives each its GGUF name, shape and kind; the loader, the
// validation, the engines' weight setup and synth all iterate that table.
type TensorID uint8

// The tensors llmserve knows, global ones first.
const (
	NoTensor TensorID = iota // absent (a step without a bias, say)

	TokEmbd          // token_embd
	OutputNorm       // output_norm
	Output           // output, or token_embd when tied
	RopeFreqs        // llama3 rope frequency divisors
	RopeFactorsLong  // LongRoPE divisors beyond the original context (phi3)
	RopeFactorsShort // LongRoPE divisors within it

	AttnNorm     // attn_norm
	AttnQ        // attn_q
	AttnK        // attn_k
	AttnV        // attn_v
	AttnQKV      // attn_qkv: Q, K and V rows in one matrix (phi3)
	AttnQBias    // attn_q.bias
	AttnKBias    // attn_k.bias
	AttnVBias    // attn_v.bias
	AttnQNorm    // attn_q_norm: per-head RMSNorm weights (qwen3)
	AttnKNorm    // attn_k_norm
	AttnOut      // attn_output
	AttnPostNorm // post_attention_norm (gemma2)
	FFNNorm      // ffn_norm
	FFNGate      // ffn_gate
	FFNUp        // ffn_up
	FFNGateUp    // ffn_up holding gate rows then up rows (phi3)
	FFNDown      // ffn_down
	FFNPostNorm  // post_ffw_norm (gemma2)
	FFNRouter    // ffn_gate_inp: expert router
	FFNGateExps  // ffn_gate_exps: one gate matrix per expert
	FFNUpExps    // ffn_up_exps
	FFNDownExps  // ffn_down_exps

	NumTensors // the size of a Tensors array
)

// Kind says what a tensor holds, which decides its allowed types and how
// synth draws it.
type Kind uint8

const (
	KindMatrix  Kind = iota // weights multiplied by activations (or looked up)
	KindNorm                // RMSNorm weights, F32
	KindBias                // added after a product, F32
	KindFactors             // rope frequency divisors, F32
)

// Dim is a symbolic dimension of a tensor, sized by a Config.
type Dim uint8

const (
	DimEmbd     Dim = iota // Embd
	DimVocab               // Vocab
	DimQ                   // Heads·HeadDim
	DimKV                  // KVHeads·HeadDim
	DimQKV                 // Q, K and V together
	DimHead                // HeadDim
	DimFFN                 // FFN (per expert in a mixture)
	DimFFN2                // 2·FFN: gate and up together
	DimRopeHalf            // RopeDim/2
	DimExperts             // Experts
)

// TensorSpec is one row of the tensor table.
type TensorSpec struct {
	Name     string // GGUF name; a block's tensor is "blk.N." + Name
	PerLayer bool   // one per block
	Kind     Kind
	Shape    []Dim // ggml order: Shape[0] is the row length
	Optional bool  // loaded when the file has it (Output falls back to TokEmbd)
}

// tensorTable describes every TensorID. It is never written to.
var tensorTable = [NumTensors]TensorSpec{
	TokEmbd:          {Name: "token_embd.weight", Shape: []Dim{DimEmbd, DimVocab}},
	OutputNorm:       {Name: "output_norm.weight", Kind: KindNorm, Shape: []Dim{DimEmbd}},
	Output:           {Name: "output.weight", Shape: []Dim{DimEmbd, DimVocab}, Optional: true},
	RopeFreqs:        {Name: "rope_freqs.weight", Kind: KindFactors, Shape: []Dim{DimRopeHalf}, Optional: true},
	RopeFactorsLong:  {Name: "rope_factors_long.weight", Kind: KindFactors, Shape: []Dim{DimRopeHalf}, Optional: true},
	RopeFactorsShort: {Name: "rope_factors_short.weight", Kind: KindFactors, Shape: []Dim{DimRopeHalf}, Optional: true},

	AttnNorm:     {Name: "attn_norm.weight", PerLayer: true, Kind: KindNorm, Shape: []Dim{DimEmbd}},
	AttnQ:        {Name: "attn_q.weight", PerLayer: true, Shape: []Dim{DimEmbd, DimQ}},
	AttnK:        {Name: "attn_k.weight", PerLayer: true, Shape: []Dim{DimEmbd, DimKV}},
	AttnV:        {Name: "attn_v.weight", PerLayer: true, Shape: []Dim{DimEmbd, DimKV}},
	AttnQKV:      {Name: "attn_qkv.weight", PerLayer: true, Shape: []Dim{DimEmbd, DimQKV}},
	AttnQBias:    {Name: "attn_q.bias", PerLayer: true, Kind: KindBias, Shape: []Dim{DimQ}},
	AttnKBias:    {Name: "attn_k.bias", PerLayer: true, Kind: KindBias, Shape: []Dim{DimKV}},
	AttnVBias:    {Name: "attn_v.bias", PerLayer: true, Kind: KindBias, Shape: []Dim{DimKV}},
	AttnQNorm:    {Name: "attn_q_norm.weight", PerLayer: true, Kind: KindNorm, Shape: []Dim{DimHead}},
	AttnKNorm:    {Name: "attn_k_norm.weight", PerLayer: true, Kind: KindNorm, Shape: []Dim{DimHead}},
	AttnOut:      {Name: "attn_output.weight", PerLayer: true, Shape: []Dim{DimQ, DimEmbd}},
	AttnPostNorm: {Name: "post_attention_norm.weight", PerLayer: true, Kind: KindNorm, Shape: []Dim{DimEmbd}},
	FFNNorm:      {Name: "ffn_norm.weight", PerLayer: true, Kind: KindNorm, Shape: []Dim{DimEmbd}},
	FFNGate:      {Name: "ffn_gate.weight", PerLayer: true, Shape: []Dim{DimEmbd, DimFFN}},
	FFNUp:        {Name: "ffn_up.weight", PerLayer: true, Shape: []Dim{DimEmbd, DimFFN}},
	FFNGateUp:    {Name: "ffn_up.weight", PerLayer: true, Shape: []Dim{DimEmbd, DimFFN2}},
	FFNDown:      {Name: "ffn_down.weight", PerLayer: true, Shape: []Dim{DimFFN, DimEmbd}},
	FFNPostNorm:  {Name: "post_ffw_norm.weight", PerLayer: true, Kind: KindNorm, Shape: []Dim{DimEmbd}},
	FFNRouter:    {Name: "ffn_gate_inp.weight", PerLayer: true, Shape: []Dim{DimEmbd, DimExperts}},
	FFNGateExps:  {Name: "ffn_gate_exps.weight", PerLayer: true, Shape: []Dim{DimEmbd, DimFFN, DimExperts}},
	FFNUpExps:    {Name: "ffn_up_exps.weight", PerLayer: true, Shape: []Dim{DimEmbd, DimFFN, DimExperts}},
	FFNDownExps:  {Name: "ffn_down_exps.weight", PerLayer: true, Shape: []Dim{DimFFN, DimEmbd, DimExperts}},
}

// Spec returns the table row of id.
func Spec(id TensorID) TensorSpec {
	if id >= NumTensors {
		return TensorSpec{}
	}
	return tensorTable[id]
}

// TensorName is id's name in a GGUF file, in block layer for a per-layer
// tensor.
func TensorName(id TensorID, layer int) string {
	s := Spec(id)
	if s.PerLayer {
		return fmt.Sprintf("blk.%d.%s", layer, s.Name)
	}
	return s.Name
}

// Size is the extent of d in c.
func (c *Config) Size(d Dim) int64 {
	switch d {
	case DimEmbd:
		return int64(c.Embd)
	case DimVocab:
		return int64(c.Vocab)
	case DimQ:
		return int64(c.Heads * c.HeadDim)
	case DimKV:
		return int64(c.KVHeads * c.HeadDim)
	case DimQKV:
		return int64((c.Heads + 2*c.KVHeads) * c.HeadDim)
	case DimHead:
		return int64(c.HeadDim)
	case DimFFN:
		return int64(c.FFN)
	case DimFFN2:
		return 2 * int64(c.FFN)
	case DimRopeHalf:
		return int64(c.RopeDim / 2)
	case DimExperts:
		return int64(c.Experts)
	}
	return 0
}

// Shape is the ggml-order shape id has in a model of c.
func (c *Config) Shape(id TensorID) []int64 {
	s := Spec(id)
	dims := make([]int64, len(s.Shape))
	for i, d := range s.Shape {
		dims[i] = c.Size(d)
	}
	return dims
}

// Tensors holds a model's tensors by TensorID; absent ones are nil.
type Tensors [NumTensors]*Tensor
