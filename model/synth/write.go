package synth

import (
	"fmt"
	"io"
	"runtime"

	"llmserve/gguf"
)

// Options says what model Write produces.
type Options struct {
	Config   Config
	FileType string     // a name from FileTypes: F32, F16, BF16, Q8_0, Q4_0, Q4_K_M, Q5_K_M, Q6_K...
	Seed     uint64     // the same options and seed give the same bytes
	Vocab    *gguf.File // tokenizer.* keys are copied from it; nil means BuiltinVocab
	Workers  int        // goroutines that generate and quantize; 0 means GOMAXPROCS
}

// plannedTensor is a tensor with its file type and generator key.
type plannedTensor struct {
	tensorSpec
	typ gguf.Type
	key uint64 // generator key from the seed and the name
}

// Write writes the model o describes to dst as a GGUF file. Tensors are
// generated and quantized in row chunks by o.Workers goroutines and written
// as they complete, so memory use does not grow with the model.
func Write(dst io.Writer, o Options) error {
	c := &o.Config
	if err := c.Validate(); err != nil {
		return err
	}
	mix, fileType, err := parseFileType(o.FileType)
	if err != nil {
		return err
	}
	vocab := o.Vocab
	if vocab == nil {
		if vocab, err = BuiltinVocab(); err != nil {
			return err
		}
	}
	nVocab, err := vocabSize(vocab)
	if err != nil {
		return err
	}
	if err := checkNameQuirks(c.Name, vocab); err != nil {
		return err
	}

	specs, err := c.tensors(nVocab)
	if err != nil {
		return err
	}
	types, err := tensorTypes(mix, c, specs)
	if err != nil {
		return err
	}
	plan := make([]plannedTensor, len(specs))
	for i := range specs {
		plan[i] = plannedTensor{tensorSpec: specs[i], typ: types[i], key: tensorKey(o.Seed, specs[i].name)}
	}

	w := gguf.NewWriter(dst)
	setMetadata(w, c, fileType, nVocab)
	copyTokenizer(w, vocab)
	for i := range plan {
		w.AddTensor(plan[i].name, plan[i].typ, plan[i].dims...)
	}
	if err := w.WriteHeader(); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if err := writeTensors(w, plan, c, workers); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	return nil
}

// setMetadata sets the general and architecture keys, as llama.cpp's
// converter writes them.
func setMetadata(w *gguf.Writer, c *Config, fileType uint32, nVocab int) {
	a := c.Arch + "."
	w.SetString("general.architecture", c.Arch)
	w.SetString("general.name", c.Name)
	w.SetUint32(a+"context_length", uint32(c.ContextLength))
	w.SetUint32(a+"embedding_length", uint32(c.Embedding))
	w.SetUint32(a+"block_count", uint32(c.Layers))
	w.SetUint32(a+"feed_forward_length", uint32(c.FFN))
	w.SetUint32(a+"attention.head_count", uint32(c.Heads))
	w.SetUint32(a+"attention.head_count_kv", uint32(c.KVHeads))
	if c.HeadDim*c.Heads != c.Embedding || c.Arch == "qwen3" || c.Arch == "gemma2" {
		w.SetUint32(a+"attention.key_length", uint32(c.HeadDim))
		w.SetUint32(a+"attention.value_length", uint32(c.HeadDim))
	}
	w.SetFloat32(a+"rope.freq_base", c.RopeBase)
	w.SetFloat32(a+"attention.layer_norm_rms_epsilon", c.RMSEps)
	w.SetUint32(a+"rope.dimension_count", uint32(c.HeadDim))
	w.SetUint32(a+"vocab_size", uint32(nVocab))
	if c.Experts > 0 {
		w.SetUint32(a+"expert_count", uint32(c.Experts))
		w.SetUint32(a+"expert_used_count", uint32(c.ExpertsUsed))
	}
	if c.SlidingWindow > 0 {
		w.SetUint32(a+"attention.sliding_window", uint32(c.SlidingWindow))
	}
	if c.AttnSoftcap > 0 {
		w.SetFloat32(a+"attn_logit_softcapping", c.AttnSoftcap)
	}
	if c.FinalSoftcap > 0 {
		w.SetFloat32(a+"final_logit_softcapping", c.FinalSoftcap)
	}
	if s := c.LongRope; s != nil {
		w.SetUint32(a+"rope.scaling.original_context_length", uint32(s.OriginalContext))
		w.SetFloat32(a+"rope.scaling.attn_factor", s.attnFactor(c.ContextLength))
	}
	w.SetUint32("general.file_type", fileType)
	w.SetUint32("general.quantization_version", 2)
}
