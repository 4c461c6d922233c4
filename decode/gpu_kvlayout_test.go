package decode

import (
	"strings"
	"testing"

	"llmserve/model"
)

func TestGPUKVLayout(t *testing.T) {
	m := &model.Model{}
	m.Layers = make([]model.Layer, 4)
	m.KVHeads, m.HeadDim = 2, 64
	perTok := int64(4 * 2 * 2 * 128) // layers × (K and V) × 2 bytes × 128 values
	cases := []struct {
		name               string
		ctx, seqs, bs      int
		mem                int64
		wantBlocks, wantBS int
		wantErr            string
	}{
		{"slots × contexts", 100, 3, 32, 0, 3 * 4, 32, ""},
		{"default block size", 64, 2, 0, 0, 2 * 2, DefaultBlockSize, ""},
		{"memory budget", 100, 3, 16, perTok * 16 * 20, 20, 16, ""},
		{"budget under one context", 100, 3, 16, perTok * 16 * 6, 0, 0, "less than one context"},
	}
	for _, c := range cases {
		l, err := gpuKVLayout(m, c.ctx, c.seqs, c.bs, c.mem)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if l.Blocks != c.wantBlocks || l.BlockSize != c.wantBS || l.K != KVF16 || l.V != KVF16 || l.BytesPerToken() != perTok {
			t.Errorf("%s: %d blocks of %d (%v/%v, %d bytes a token), want %d of %d (f16, %d)", c.name, l.Blocks, l.BlockSize, l.K, l.V, l.BytesPerToken(), c.wantBlocks, c.wantBS, perTok)
		}
	}
	m.HeadDim = 20
	if _, err := gpuKVLayout(m, 64, 1, 16, 0); err == nil {
		t.Error("heads of 20 values: no error")
	}
}

func TestFillDeviceTables(t *testing.T) {
	l := KVLayout{BlockSize: 4, Blocks: 10}
	const seqs, cols = 3, 3
	b := &Batch{Tokens: []int32{1, 1}, Pos: []int32{5, 0}, Seq: []int32{0, 2}, Logits: []bool{true, true},
		Blocks: [][]int32{{7, 3}, nil, {9}}}
	dst := make([]int32, seqs*cols)
	if err := fillDeviceTables(dst, cols, l, b, nil, seqs); err != nil {
		t.Fatal(err)
	}
	want := []int32{7, 3, -1, -1, -1, -1, 9, -1, -1}
	for i := range want {
		if dst[i] != want[i] {
			t.Fatalf("tables %v, want %v", dst, want)
		}
	}
	bad := []struct {
		name string
		b    *Batch
	}{
		{"position past the table", &Batch{Tokens: []int32{1}, Pos: []int32{8}, Seq: []int32{0}, Logits: []bool{true}, Blocks: b.Blocks}},
		{"block outside the pool", &Batch{Tokens: []int32{1}, Pos: []int32{0}, Seq: []int32{1}, Logits: []bool{true}, Blocks: [][]int32{nil, {10}, nil}}},
		{"too few tables", &Batch{Tokens: []int32{1}, Pos: []int32{0}, Seq: []int32{0}, Logits: []bool{true}, Blocks: [][]int32{{1}}}},
		{"no tables, no fixed slots", &Batch{Tokens: []int32{1}, Pos: []int32{0}, Seq: []int32{0}, Logits: []bool{true}}},
	}
	for _, c := range bad {
		if err := fillDeviceTables(dst, cols, l, c.b, nil, seqs); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	fixed := fixedTables(KVLayout{BlockSize: 4, Blocks: 9}, seqs, 12)
	nb := &Batch{Tokens: []int32{1}, Pos: []int32{11}, Seq: []int32{2}, Logits: []bool{true}}
	if err := fillDeviceTables(dst, cols, l, nb, fixed, seqs); err != nil {
		t.Fatal(err)
	}
	if dst[2*cols+2] != 8 {
		t.Errorf("fixed tables: slot 2 block 2 is %d, want 8", dst[2*cols+2])
	}
}

// TestPoolShare checks the GPU pool's budget from a share of the memory
// the weights leave: the share of what the step buffers leave, and clear
// errors for a share outside (0, 1] or no memory left.
func TestPoolShare(t *testing.T) {
	for _, c := range []struct {
		free, bufs int64
		share      float64
		want       int64
		err        string
	}{
		{free: 100 << 30, bufs: 4 << 30, share: 0.5, want: 48 << 30},
		{free: 10 << 30, bufs: 0, share: 1, want: 10 << 30},
		{free: 1 << 30, bufs: 2 << 30, share: 0.5, err: "no room"},
		{free: 1 << 30, bufs: 0, share: 0, err: "more than 0"},
		{free: 1 << 30, bufs: 0, share: 1.5, err: "at most 1"},
	} {
		got, err := poolShare(c.free, c.bufs, c.share)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("poolShare(%d, %d, %v): err %v, want one naming %q", c.free, c.bufs, c.share, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("poolShare(%d, %d, %v) = %d, %v; want %d", c.free, c.bufs, c.share, got, err, c.want)
		}
	}
}
