package decode

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"llmserve/model"
)

// planString writes block l's plan as its groups' step names joined by
// "+", a group that normalizes or accumulates marked (norm) or
// (residual).
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
		{"golden-arch/tiny-gemma2-Q8_0.gguf", "attn_norm+Qcur+Kcur+Vcur(norm) Qcur_rope Kcur_rope kqv_out attn_out attn_post_norm sa_out " +
			"ffn_norm+ffn_gate+ffn_up(norm) ffn_geglu ffn_out ffn_post_norm l_out"},
		{"golden-arch/tiny-phi3-Q8_0.gguf", "attn_norm+wqkv(norm) Qcur Kcur Vcur Qcur_rope Kcur_rope kqv_out attn_out+ffn_inp(residual) " +
			"ffn_norm+ffn_up(norm) ffn_swiglu ffn_out+l_out(residual)"},
		{"golden-arch/tiny-mixtral-Q8_0.gguf", "attn_norm+Qcur+Kcur+Vcur(norm) Qcur_rope Kcur_rope kqv_out attn_out+ffn_inp(residual) " +
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
	// reread makes a block read BufCur once more right after the step
	// named after: the norm or product before must not be folded then.
	reread := func(after string) func(*model.Model) {
		return func(m *model.Model) {
			for l, b := range m.Graph.Blocks {
				i := slices.IndexFunc(b, func(s model.Step) bool { return s.Name == after })
				m.Graph.Blocks[l] = slices.Insert(slices.Clone(b), i+1, model.Step{Op: model.OpAdd, Name: "reread", In: model.BufCur, Out: model.BufX})
			}
		}
	}
	cases := []struct {
		rel    string
		tamper func(*model.Model)
	}{
		{"golden-arch/tiny-gemma2-Q8_0.gguf", nil}, {"golden-arch/tiny-phi3-Q8_0.gguf", nil},
		{"golden-arch/tiny-mixtral-Q8_0.gguf", nil}, {"golden/tiny-llama-Q8_0.gguf", nil},
		{"golden-arch/tiny-mixtral-Q8_0.gguf", reread("Vcur")},  // attn_norm's result read after Q, K and V
		{"golden-arch/tiny-phi3-Q8_0.gguf", reread("ffn_inp")},  // attn_out's result read after its residual
		{"golden-arch/tiny-gemma2-Q8_0.gguf", reread("ffn_up")}, // ffn_norm's result read after gate and up
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
				// its unwritten outputs keep their old versions.
				before := planned.ver
				var folded []model.Buf
				for i, s := range steps[g.First : g.First+g.N] {
					if (g.Norm && i == 0) || (g.Residual && i == g.N-2) {
						folded = append(folded, s.Out)
					}
					step(&planned, s)
				}
				for _, b := range folded {
					planned.ver[b] = before[b]
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
