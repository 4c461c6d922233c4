package decode

import (
	"math/rand"
	"testing"

	"llmserve/kernels"
)

// TestDeviceKVPoolCellOffset checks that the device pool's addressing
// (kernels.KVPoolLayout.CellOffset, the Go mirror of kv.cuh's kv_cell)
// names the same cell as the CPU cache's cellOf, for random block tables
// of sequences of 1..3 blocks and a partial one, and for several block
// sizes.
func TestDeviceKVPoolCellOffset(t *testing.T) {
	rng := rand.New(rand.NewSource(18))
	for _, bs := range []int{1, 16, 32, 64} {
		const seqs, cols = 6, 4
		blocks := seqs*cols + 3
		l := kernels.KVPoolLayout{MaxSeqs: seqs, TableCols: cols, BlockSize: bs, Blocks: blocks, KVHeads: 2, HeadDim: 64, Elem: kernels.KVPoolF16}
		flat := make([]int32, seqs*cols)
		for i := range flat {
			flat[i] = -1
		}
		perm := rng.Perm(blocks)
		lens := make([]int, seqs)
		checked := 0
		for s := range lens {
			lens[s] = 1 + rng.Intn(cols*bs) // 1 position .. a full row
			table := make([]int32, (lens[s]+bs-1)/bs)
			for j := range table {
				table[j] = int32(perm[s*cols+j])
				flat[s*cols+j] = table[j]
			}
			for p := 0; p < lens[s]; p++ {
				want := int64(cellOf(table, bs, p))
				if got := l.CellOffset(flat, s, p); got != want {
					t.Fatalf("block size %d, slot %d, position %d: CellOffset %d, cellOf %d", bs, s, p, got, want)
				}
				checked++
			}
			// A position past the sequence's last block reads no cell.
			if end := len(table) * bs; end < l.Ctx() {
				if got := l.CellOffset(flat, s, end); got != -1 {
					t.Errorf("block size %d, slot %d: position %d past the table gave cell %d", bs, s, end, got)
				}
			}
		}
		if checked < seqs {
			t.Fatalf("block size %d: only %d positions checked", bs, checked)
		}
	}
}
