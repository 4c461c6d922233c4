package nmse

import "testing"

func TestOf(t *testing.T) {
	cases := []struct {
		got, ref []float32
		want     float64
	}{
		{[]float32{1, 2}, []float32{1, 2}, 0},
		{[]float32{1, 0}, []float32{0, 1}, 2},
		{[]float32{3, 4}, []float32{3, 2}, 4.0 / 13},
	}
	for _, c := range cases {
		if got := Of(c.got, c.ref); got != c.want {
			t.Errorf("Of(%v, %v) = %v, want %v", c.got, c.ref, got, c.want)
		}
	}
}
