//go:build cuda

package kernels

import (
	"fmt"
	"math"
	"sort"
	"testing"

	"llmserve/internal/cuda"
)

// layoutField is one figure a layout kernel (mmh_layout, mmhq_layout,
// mmq_layout) writes, and the Go value it must equal.
type layoutField struct {
	field string
	v     uintptr
}

// checkLayout launches the layout kernel named kernel on one thread, which
// writes len(want) ints, and checks each against want, in order.
func checkLayout(t *testing.T, kernel string, want []layoutField) {
	t.Helper()
	g := newBuffers(t)
	out := g.i32(make([]int32, len(want)))
	if err := dev.launch(kernel, cuda.Dim3{X: 1}, cuda.Dim3{X: 1}, 0, cuda.P(out.Ptr)); err != nil {
		t.Fatal(err)
	}
	got := readI32(t, out)
	for i, w := range want {
		if int(got[i]) != int(w.v) {
			t.Errorf("%s: %s: %d in C, %d in Go", kernel, w.field, got[i], w.v)
		}
	}
}

// checkWritten fails t at the first NaN of y (batch rows of rows values):
// a value the product left of the poisoned buffer it wrote to.
func checkWritten(t *testing.T, y []float32, rows int) {
	t.Helper()
	for i, v := range y {
		if math.IsNaN(float64(v)) {
			t.Fatalf("Y[%d][%d] not written", i/rows, i%rows)
		}
	}
}

// checkedValues lists the values of y (batch rows of rows values) at the
// weight rows checked, batch row by batch row (index b·len(checked)+i, as
// the references list them), less base's where base is not nil (the Y a
// residual product added to).
func checkedValues(y, base []float32, rows int, checked []int) []float32 {
	B := len(y) / rows
	got := make([]float32, 0, B*len(checked))
	for b := 0; b < B; b++ {
		for _, r := range checked {
			v := y[b*rows+r]
			if base != nil {
				v -= base[b*rows+r]
			}
			got = append(got, v)
		}
	}
	return got
}

// refusal is an edit of a valid product that makes it one a product must
// refuse.
type refusal struct {
	name string
	edit func(op *MatMulOp)
}

// halfRefusals are the edits both 16-bit tensor-core products (matMulHalf
// and matMulHalfQ) refuse whatever the weights: shapes, the grid's limit,
// the scratch buffer and the alignment of X and the scratch.
var halfRefusals = []refusal{
	{"x shape", func(op *MatMulOp) { op.X.Cols = 128 }},
	{"y shape", func(op *MatMulOp) { op.Y.Rows = 3 }},
	{"y cols", func(op *MatMulOp) { op.Y.Cols = 32 }},
	{"no rows", func(op *MatMulOp) { op.X.Rows, op.Y.Rows = 0, 0 }},
	{"too many weight rows", func(op *MatMulOp) { op.W.Rows, op.Y.Cols = 65535*64+1, 65535*64+1 }},
	{"scratch", func(op *MatMulOp) { op.ScratchBytes-- }},
	{"no scratch", func(op *MatMulOp) { op.Scratch = 0 }},
	{"activations alignment", func(op *MatMulOp) { op.X.Ptr += 4 }},
	{"scratch alignment", func(op *MatMulOp) { op.Scratch += 8 }},
}

// checkRefuses checks that run (named name in the messages) runs good,
// the device syncing clean after it, and returns an error for good under
// each edit of cases, one subtest a case.
func checkRefuses(t *testing.T, name string, run func(MatMulOp) error, good MatMulOp, cases []refusal) {
	t.Helper()
	if len(cases) == 0 {
		t.Fatalf("%s: no cases", name)
	}
	if err := run(good); err != nil {
		t.Fatalf("%s: a valid product: %v", name, err)
	}
	if err := dev.Sync(); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			op := good
			c.edit(&op)
			if err := run(op); err == nil {
				t.Errorf("%s ran %+v", name, op)
			}
		})
	}
}

// benchPath is one way a product benchmark computes its product.
type benchPath struct {
	name string
	run  func() error
}

// benchRate is the rate a benchPath ran at.
type benchRate struct {
	name   string
	tflops float64
}

// timePaths runs each path once to warm up, then times reps =
// clamp(2e11/flops, 3, 200) runs of it between the events start and end,
// and returns each path's TFLOP/s (flops a run), in the order of paths.
func timePaths(b *testing.B, start, end *cuda.Event, paths []benchPath, flops float64) []benchRate {
	b.Helper()
	reps := int(min(200, max(3, 2e11/flops)))
	res := make([]benchRate, 0, len(paths))
	for _, p := range paths {
		if err := p.run(); err != nil { // warm up
			b.Fatalf("%s: %v", p.name, err)
		}
		if err := start.Record(); err != nil {
			b.Fatal(err)
		}
		for r := 0; r < reps; r++ {
			if err := p.run(); err != nil {
				b.Fatal(err)
			}
		}
		if err := end.Record(); err != nil {
			b.Fatal(err)
		}
		if err := dev.Sync(); err != nil {
			b.Fatalf("%s: %v", p.name, err)
		}
		el, err := end.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		res = append(res, benchRate{p.name, flops * float64(reps) / el.Seconds() / 1e12})
	}
	return res
}

// benchLine sorts res fastest first (ties in their order) and formats it
// after head: "head: name rate | name rate |…".
func benchLine(head string, res []benchRate) string {
	sort.SliceStable(res, func(i, j int) bool { return res[i].tflops > res[j].tflops })
	line := head + ":"
	for _, r := range res {
		line += fmt.Sprintf(" %s %.1f |", r.name, r.tflops)
	}
	return line
}
