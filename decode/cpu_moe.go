package decode

import (
	"fmt"

	"llmserve/kernels"
	"llmserve/model"
)

// moeScratch holds the buffers of an expert mixture over a chunk of at
// most B tokens.
type moeScratch struct {
	probs  []float32 // [B, Experts] router softmax
	pick   []int32   // [B, Used] chosen experts per token
	weight []float32 // [B, Used] their renormalized weights
	toks   []int32   // [B] tokens routed to the expert at hand
	wts    []float32 // [B] their weights for it
	in     []float32 // [B, Embd] the rows of toks
	out    []float32 // [B, Embd] the expert's output for them
	acc    []float32 // [B, Embd] the weighted sum over experts
}

// moeWidth is the f32-sized values per token of a moeScratch.
func moeWidth(c *model.Config) int { return c.Experts + 4*c.ExpertsUsed + 4 + 3*c.Embd }

func newMoEScratch(c *model.Config, B int) moeScratch {
	return moeScratch{
		probs: make([]float32, B*c.Experts), pick: make([]int32, B*c.ExpertsUsed), weight: make([]float32, B*c.ExpertsUsed),
		toks: make([]int32, B), wts: make([]float32, B),
		in: make([]float32, B*c.Embd), out: make([]float32, B*c.Embd), acc: make([]float32, B*c.Embd),
	}
}

// moe runs a mixture of experts over n rows of x into y, as llama.cpp
// routes: softmax over the router's logits, the st.Used most probable
// experts, their probabilities renormalized to sum 1. Each expert that at
// least one token chose runs once over the rows of those tokens; the
// others' weights are not read.
func (e *CPUEngine) moe(st *model.Step, ws *cpuTensors, x, y []float32, n int) error {
	c, s := &e.m.Config, &e.s.moe
	E, k, embd, ffn := c.Experts, st.Used, c.Embd, c.FFN
	probs := s.probs[:n*E]
	if err := kernels.MatMul(e.pool, ws[st.W].mat, x, n, probs); err != nil {
		return fmt.Errorf("ffn_gate_inp: %w", err)
	}
	for i := 0; i < n; i++ {
		p := probs[i*E : (i+1)*E]
		kernels.Softmax(p)
		topK(p, s.pick[i*k:(i+1)*k], s.weight[i*k:(i+1)*k])
	}
	acc := s.acc[:n*embd]
	clear(acc)
	gate, up := e.s.bufs[model.BufGate], e.s.bufs[model.BufUp]
	exps := [3][]kernels.Matrix{ws[st.Experts[0]].exps, ws[st.Experts[1]].exps, ws[st.Experts[2]].exps}
	for ex := 0; ex < E; ex++ {
		cnt := 0
		for i := 0; i < n; i++ {
			for j := 0; j < k; j++ {
				if s.pick[i*k+j] == int32(ex) {
					s.toks[cnt], s.wts[cnt] = int32(i), s.weight[i*k+j]
					copy(s.in[cnt*embd:(cnt+1)*embd], x[i*embd:(i+1)*embd])
					cnt++
				}
			}
		}
		if cnt == 0 {
			continue
		}
		in, g, u, out := s.in[:cnt*embd], gate[:cnt*ffn], up[:cnt*ffn], s.out[:cnt*embd]
		if err := kernels.MatMul(e.pool, exps[0][ex], in, cnt, g); err != nil {
			return fmt.Errorf("ffn_gate_exps %d: %w", ex, err)
		}
		if err := kernels.MatMul(e.pool, exps[1][ex], in, cnt, u); err != nil {
			return fmt.Errorf("ffn_up_exps %d: %w", ex, err)
		}
		glu(st.Act, g, g, u)
		if err := kernels.MatMul(e.pool, exps[2][ex], g, cnt, out); err != nil {
			return fmt.Errorf("ffn_down_exps %d: %w", ex, err)
		}
		for r := 0; r < cnt; r++ {
			t := int(s.toks[r])
			kernels.Axpy(acc[t*embd:(t+1)*embd], s.wts[r], out[r*embd:(r+1)*embd])
		}
	}
	copy(y, acc)
	return nil
}

// topK writes the indexes of the len(pick) largest probabilities of p
// (the lower index first among equals) to pick and their values,
// renormalized to sum 1, to weight.
func topK(p []float32, pick []int32, weight []float32) {
	var sum float32
	for j := range pick {
		best := -1
		for i, v := range p {
			if (best < 0 || v > p[best]) && !picked(pick[:j], i) {
				best = i
			}
		}
		pick[j], weight[j] = int32(best), p[best]
		sum += p[best]
	}
	for j := range weight {
		weight[j] /= sum
	}
}

func picked(pick []int32, i int) bool {
	for _, p := range pick {
		if int(p) == i {
			return true
		}
	}
	return false
}
