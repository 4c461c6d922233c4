package decode

import "testing"

func TestQ16Min(t *testing.T) {
	for _, c := range []struct {
		opt  int
		env  string
		want int
	}{
		{0, "", gpuQ16Min},
		{-1, "", 0},
		{32, "", 32},
		{0, "1", 1},
		{32, "0", 0},
		{-1, "200", 200},
		{16, "x", 16},
		{0, "-3", gpuQ16Min},
	} {
		if got := q16Min(c.opt, c.env); got != c.want {
			t.Errorf("q16Min(%d, %q) = %d, want %d", c.opt, c.env, got, c.want)
		}
	}
}
