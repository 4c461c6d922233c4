package decode

import (
	"slices"
	"strings"
	"testing"
)

// TestParseBuckets reads good and bad lists; bad ones name what is wrong.
func TestParseBuckets(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Buckets
		err  string // a substring of the error; "" for none
	}{
		{in: "1,2,4,8,16,32,64", want: DefaultBuckets()},
		{in: "8", want: Buckets{8}},
		{in: " 1, 3 ,64", want: Buckets{1, 3, 64}},
		{in: "", err: "empty list"},
		{in: "  ", err: "empty list"},
		{in: "1,,4", err: `item 2 ("") is not a whole number`},
		{in: "1,two", err: `item 2 ("two") is not a whole number`},
		{in: "1,2.5", err: "is not a whole number"},
		{in: "0,4", err: "size 0 out of range 1..64"},
		{in: "-1", err: "size -1 out of range"},
		{in: "1,65", err: "size 65 out of range 1..64"},
		{in: "1,4,2", err: "size 2 follows 4"},
		{in: "4,4", err: "size 4 follows 4"},
		{in: "1,2,", err: "item 3"},
	} {
		got, err := ParseBuckets(tt.in)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("ParseBuckets(%q): %v", tt.in, err)
		case tt.err == "" && !slices.Equal(got, tt.want):
			t.Errorf("ParseBuckets(%q) = %v, want %v", tt.in, got, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseBuckets(%q) = %v, %v; want an error with %q", tt.in, got, err, tt.err)
		case tt.err != "" && !strings.Contains(err.Error(), tt.in):
			t.Errorf("ParseBuckets(%q): error %q does not quote the list", tt.in, err)
		}
	}
}

// TestBucketsValidate checks lists built in code (GPUOptions.Buckets).
func TestBucketsValidate(t *testing.T) {
	for _, tt := range []struct {
		b  Buckets
		ok bool
	}{
		{DefaultBuckets(), true},
		{Buckets{64}, true},
		{Buckets{1, 63}, true},
		{nil, false},
		{Buckets{}, false},
		{Buckets{2, 1}, false},
		{Buckets{0}, false},
		{Buckets{1, 128}, false},
	} {
		if err := tt.b.Validate(); (err == nil) != tt.ok {
			t.Errorf("%v.Validate() = %v, want ok %v", tt.b, err, tt.ok)
		}
	}
}

// TestBucketsChoose checks the bucket of every step size 0..MaxBucket+1
// against the definition (the smallest bucket holding n), for several
// lists.
func TestBucketsChoose(t *testing.T) {
	for _, b := range []Buckets{DefaultBuckets(), {1, 4}, {8}, {3, 5, 64}, {1, 2, 3}} {
		for n := 0; n <= MaxBucket+1; n++ {
			i, ok := b.Choose(n)
			want := -1
			for j := len(b) - 1; j >= 0 && n >= 1; j-- {
				if b[j] >= n {
					want = j
				}
			}
			if ok != (want >= 0) || (ok && i != want) {
				t.Errorf("%v.Choose(%d) = %d, %v; want %d", b, n, i, ok, want)
			}
		}
	}
	// A few by hand, so the definition above is not the only witness.
	for _, tt := range []struct {
		b    Buckets
		n    int
		size int // 0: no bucket
	}{
		{DefaultBuckets(), 1, 1}, {DefaultBuckets(), 3, 4}, {DefaultBuckets(), 33, 64}, {DefaultBuckets(), 65, 0},
		{Buckets{1, 4}, 2, 4}, {Buckets{1, 4}, 5, 0}, {Buckets{8}, 0, 0},
	} {
		i, ok := tt.b.Choose(tt.n)
		size := 0
		if ok {
			size = tt.b[i]
		}
		if size != tt.size {
			t.Errorf("%v: step of %d tokens runs in bucket %d, want %d", tt.b, tt.n, size, tt.size)
		}
	}
}

// TestBucketsString round-trips through ParseBuckets.
func TestBucketsString(t *testing.T) {
	for _, b := range []Buckets{DefaultBuckets(), {7}, {1, 3, 64}} {
		got, err := ParseBuckets(b.String())
		if err != nil || !slices.Equal(got, b) {
			t.Errorf("ParseBuckets(%q) = %v, %v; want %v", b.String(), got, err, b)
		}
		if b.Max() != b[len(b)-1] {
			t.Errorf("%v.Max() = %d", b, b.Max())
		}
	}
	if (Buckets{}).Max() != 0 {
		t.Errorf("empty Buckets' Max is not 0")
	}
}
