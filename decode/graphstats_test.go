package decode

import (
	"slices"
	"strings"
	"testing"
)

// TestWriteKernelTable checks the rows and the totals per kernel and op
// over all layers.
func TestWriteKernelTable(t *testing.T) {
	ts := []KernelTime{
		{Kernel: "get_rows_F32", Layer: -1, Op: "token_embd", Micros: 2, Share: 0.1},
		{Kernel: "matvec_F32_1", Layer: 0, Op: "attn_q", Micros: 10, Share: 0.5},
		{Kernel: "matvec_F32_1", Layer: 0, Op: "attn_k", Micros: 8, Share: 0.4},
		{Kernel: "matvec_F32_1", Layer: 1, Op: "attn_k", Micros: 6, Share: 0.3},
	}
	var sb strings.Builder
	if err := WriteKernelTable(&sb, ts); err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	for _, line := range strings.Split(sb.String(), "\n") {
		rows = append(rows, strings.Fields(line))
	}
	for _, want := range [][]string{
		{"kernel", "layer", "op", "µs", "share"},
		{"get_rows_F32", "-", "token_embd", "2.0", "10.0%"},
		{"matvec_F32_1", "0", "attn_q", "10.0", "50.0%"},
		{"matvec_F32_1", "0", "attn_k", "8.0", "40.0%"},
		{"total", "4", "launches", "26.0", "100%"},
		{"get_rows_F32", "token_embd", "2.0", "7.7%"},
		{"matvec_F32_1", "attn_q", "10.0", "38.5%"},
		{"matvec_F32_1", "attn_k", "14.0", "53.8%"},
	} {
		if !slices.ContainsFunc(rows, func(r []string) bool { return slices.Equal(r, want) }) {
			t.Errorf("table lacks row %q:\n%s", want, sb.String())
		}
	}
}
