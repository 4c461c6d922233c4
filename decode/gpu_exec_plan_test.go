package decode

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"llmserve/model"
)

// planString writes block l's plan as its groups' step names joined by
// "+", a group that normalizes, accumulates, gates, splits or adds a norm
// marked (norm), (residual), (glu), (split N) or (norm-add).
func planString(steps []string, plan []execGroup) string {
	var parts []string
	for _, g := range plan {
		p := strings.Join(steps[g.First:g.First+g.N], "+")
		if g.Norm {
			p += "(norm)"
		}
		if g.Residual {
			p += "(residual)"
		}
		if g.GLU {
			p += "(glu)"
		}
		if g.Split > 0 {
			p += fmt.Sprintf("(split %d)", g.Split)
		}
		if g.NormAdd {
			p += "(norm-add)"
		}
		if g.Rope {
			p += "(rope)"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " ")
}

// TestExecPlan checks how the GPU executor groups the steps of each
// architecture's blocks: norms into the products that alone read them,
// products of one input into one launch, a product into the residual it
// alone feeds; every step in exactly one group, in order.
func TestExecPlan(t *testing.T) {
	cases := []struct{ rel, want string }{
		{"golden-arch/tiny-gemma2-Q8_0.gguf", "attn_norm+Qcur+Kcur+Vcur+Qcur_rope+Kcur_rope(norm)(rope) kqv_out attn_out attn_post_norm+sa_out(norm-add) " +
			"ffn_norm+ffn_gate+ffn_up+ffn_geglu(norm)(glu) ffn_out ffn_post_norm+l_out(norm-add)"},
		{"golden-arch/tiny-phi3-Q8_0.gguf", "attn_norm+wqkv+Qcur+Kcur+Vcur+Qcur_rope+Kcur_rope(norm)(split 3)(rope) kqv_out attn_out+ffn_inp(residual) " +
			"ffn_norm+ffn_up+ffn_swiglu(norm)(glu) ffn_out+l_out(residual)"},
		{"golden-arch/tiny-mixtral-Q8_0.gguf", "attn_norm+Qcur+Kcur+Vcur+Qcur_rope+Kcur_rope(norm)(rope) kqv_out attn_out+ffn_inp(residual) " +
			"ffn_norm ffn_moe_out l_out"},
	}
	for _, c := range cases {
		m := loadModel(t, c.rel)
		for l, steps := range m.Graph.Blocks {
			names := make([]string, len(steps))
			for i, s := range steps {
				names[i] = s.Name
			}
			plan := execPlan(m, l)
			next := 0
			for _, g := range plan {
				if g.First != next || g.N < 1 {
					t.Fatalf("%s: blk.%d: group at step %d of %d steps, want step %d", c.rel, l, g.First, g.N, next)
				}
				next += g.N
			}
			if next != len(steps) {
				t.Fatalf("%s: blk.%d: the plan covers %d of %d steps", c.rel, l, next, len(steps))
			}
			if got := planString(names, plan); got != c.want {
				t.Errorf("%s: blk.%d plan\n got %s\nwant %s", c.rel, l, got, c.want)
			}
		}
	}
}

// TestExecPlanReads runs each golden model's pass symbolically, buffer
// versions for values, once step by step and once as the executor's plan
// launches it (a norm folded into its products and a product folded into
// its residual leave their own outputs unwritten), and checks that every
// step outside a group reads the same versions both ways: what a group
// leaves unwritten is never read.
func TestExecPlanReads(t *testing.T) {
	reads := func(s model.Step) []model.Buf {
		var bs []model.Buf
		for b := model.BufX; b < model.NumBufs; b++ {
			if execReads(s, b) {
				bs = append(bs, b)
			}
		}
		return bs
	}
	// rereadBuf makes a block read buf once more right after the step
	// named after: the step that wrote it must not be folded then.
	rereadBuf := func(after string, buf model.Buf) func(*model.Model) {
		return func(m *model.Model) {
			for l, b := range m.Graph.Blocks {
				i := slices.IndexFunc(b, func(s model.Step) bool { return s.Name == after })
				m.Graph.Blocks[l] = slices.Insert(slices.Clone(b), i+1, model.Step{Op: model.OpAdd, Name: "reread", In: buf, Out: model.BufX})
			}
		}
	}
	reread := func(after string) func(*model.Model) { return rereadBuf(after, model.BufCur) }
	cases := []struct {
		rel    string
		tamper func(*model.Model)
	}{
		{"golden-arch/tiny-gemma2-Q8_0.gguf", nil}, {"golden-arch/tiny-phi3-Q8_0.gguf", nil},
		{"golden-arch/tiny-mixtral-Q8_0.gguf", nil}, {"golden/tiny-llama-Q8_0.gguf", nil},
		{"golden-arch/tiny-mixtral-Q8_0.gguf", reread("Vcur")},                        // attn_norm's result read after Q, K and V
		{"golden-arch/tiny-phi3-Q8_0.gguf", reread("ffn_inp")},                        // attn_out's result read after its residual
		{"golden-arch/tiny-gemma2-Q8_0.gguf", reread("ffn_up")},                       // ffn_norm's result read after gate and up
		{"golden-arch/tiny-gemma2-Q8_0.gguf", rereadBuf("ffn_geglu", model.BufUp)},    // the up product's result read after the GLU
		{"golden-arch/tiny-gemma2-Q8_0.gguf", reread("sa_out")},                       // attn_post_norm's result read after its add
		{"golden-arch/tiny-phi3-Q8_0.gguf", rereadBuf("Vcur", model.BufQKV)},          // the fused Q/K/V product read after its splits
		{"golden-arch/tiny-phi3-Q8_0.gguf", rereadBuf("ffn_swiglu", model.BufGateUp)}, // the fused gate/up product read after the GLU
		{"golden-arch/tiny-phi3-Q8_0.gguf", rereadBuf("ffn_swiglu", model.BufUp)},     // the scratch of the up half read after the GLU
	}
	for _, c := range cases {
		rel, m := c.rel, loadModel(t, c.rel)
		if c.tamper != nil {
			mc := *m
			mc.Graph.Blocks = slices.Clone(m.Graph.Blocks)
			c.tamper(&mc)
			m = &mc
		}
		type run struct {
			ver  [model.NumBufs]int
			next int
			seen []string // per step: the versions it read
		}
		write := func(r *run, b model.Buf) { r.next++; r.ver[b] = r.next }
		step := func(r *run, s model.Step) {
			v := fmt.Sprint(s.Name)
			for _, b := range reads(s) {
				v += fmt.Sprintf(" %d:%d", b, r.ver[b])
			}
			r.seen = append(r.seen, v)
			write(r, s.Out)
			if s.Op == model.OpAttention {
				write(r, model.BufAtt)
			}
		}
		var seq, planned run
		garbage := 0 // the versions of what no step by step run holds
		for l, steps := range m.Graph.Blocks {
			for _, s := range steps {
				step(&seq, s)
			}
			for _, g := range execPlan(m, l) {
				if g.N == 1 {
					step(&planned, steps[g.First])
					continue
				}
				// A group: its steps read as they would (a folded norm's
				// products read the norm of its input), and after it
				// what its steps wrote for each other (a result a later
				// step of the group reads and none writes again) holds
				// nothing anyone may read: a version no step by step run
				// has. A gated product of one fused matrix uses BufUp as
				// scratch.
				grp := steps[g.First : g.First+g.N]
				var inner []model.Buf
				for i, s := range grp {
					read := false
					for _, t := range grp[i+1:] {
						if t.Out == s.Out {
							read = false
							break
						}
						read = read || execReads(t, s.Out)
					}
					if read {
						inner = append(inner, s.Out)
					}
					step(&planned, s)
				}
				if g.GLU && grp[g.N-1].In2 == model.NoBuf {
					inner = append(inner, model.BufUp)
				}
				for _, b := range inner {
					garbage--
					planned.ver[b] = garbage
				}
			}
		}
		for _, s := range m.Graph.Output {
			step(&seq, s)
			step(&planned, s)
		}
		for i := range seq.seen {
			if seq.seen[i] != planned.seen[i] {
				t.Errorf("%s: step %d reads %q as planned, %q step by step", rel, i, planned.seen[i], seq.seen[i])
			}
		}
	}
}
