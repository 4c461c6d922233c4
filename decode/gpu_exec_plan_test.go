package decode

import (
	"strings"
	"testing"
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
