package kernels

import "testing"

func TestAllocHuge(t *testing.T) {
	for _, n := range []int{1, 4096, 3<<20 + 5} {
		b, free, err := AllocHuge(n)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != n {
			t.Errorf("AllocHuge(%d) has %d bytes", n, len(b))
		}
		for i := range b {
			if b[i] != 0 {
				t.Fatalf("AllocHuge(%d): byte %d = %d, want 0", n, i, b[i])
			}
			b[i] = byte(i)
		}
		if b[n-1] != byte(n-1) {
			t.Errorf("AllocHuge(%d): last byte not writable", n)
		}
		if err := free(); err != nil {
			t.Errorf("free: %v", err)
		}
	}
}
