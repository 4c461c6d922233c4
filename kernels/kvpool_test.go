package kernels

import (
	"testing"
)

func TestKVPoolCellOffset(t *testing.T) {
	l := KVPoolLayout{MaxSeqs: 3, TableCols: 4, BlockSize: 16, Blocks: 10, KVHeads: 2, HeadDim: 64, Elem: KVPoolF16}
	tables := []int32{
		7, 2, 9, -1,
		0, 1, 2, 3,
		5, 10, 4, 4,
	}
	cases := []struct {
		name     string
		seq, pos int
		want     int64
	}{
		{"first cell", 0, 0, 7 * 16},
		{"last cell of a block", 0, 15, 7*16 + 15},
		{"next block", 0, 16, 2 * 16},
		{"third block, partial", 0, 37, 9*16 + 5},
		{"unfilled entry", 0, 48, -1},
		{"second slot", 1, 63, 3*16 + 15},
		{"past the row", 1, 64, -1},
		{"block id past the pool", 2, 16, -1},
		{"shared block", 2, 50, 4*16 + 2},
		{"negative position", 1, -1, -1},
		{"negative slot", -1, 0, -1},
		{"slot past the table", 3, 0, -1},
	}
	for _, c := range cases {
		if got := l.CellOffset(tables, c.seq, c.pos); got != c.want {
			t.Errorf("%s: CellOffset(%d, %d) = %d, want %d", c.name, c.seq, c.pos, got, c.want)
		}
	}
	if got := l.CellOffset(tables[:5], 1, 16); got != -1 {
		t.Errorf("short table: CellOffset = %d, want -1", got)
	}
}

func TestKVPoolLayoutCheck(t *testing.T) {
	ok := KVPoolLayout{MaxSeqs: 2, TableCols: 4, BlockSize: 16, Blocks: 8, KVHeads: 2, HeadDim: 64, Elem: KVPoolF16}
	if err := ok.check("t"); err != nil {
		t.Fatalf("valid layout: %v", err)
	}
	bad := map[string]func(*KVPoolLayout){
		"f32":           func(l *KVPoolLayout) { l.Elem = KVPoolF32 },
		"head of 12":    func(l *KVPoolLayout) { l.HeadDim = 12 },
		"head too wide": func(l *KVPoolLayout) { l.HeadDim = 264 },
		"no blocks":     func(l *KVPoolLayout) { l.Blocks = 0 },
		"block size 0":  func(l *KVPoolLayout) { l.BlockSize = 0 },
		"no table":      func(l *KVPoolLayout) { l.TableCols = 0 },
	}
	for name, f := range bad {
		l := ok
		f(&l)
		if err := l.check("t"); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if got, want := ok.Bytes(), int64(8*16*128*2); got != want {
		t.Errorf("Bytes = %d, want %d", got, want)
	}
}
