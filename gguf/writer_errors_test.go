package gguf

import (
	"bytes"
	"strings"
	"testing"
)

// TestWriterErrors checks that each misuse of the Writer fails with an error
// that says what went wrong.
func TestWriterErrors(t *testing.T) {
	tests := []struct {
		name string
		run  func(w *Writer) error
		want string // substring of the error
	}{
		{"out of order", func(w *Writer) error {
			w.AddTensor("a", TypeF32, 4)
			w.AddTensor("b", TypeF32, 4)
			return w.WriteTensor("b", make([]byte, 16))
		}, `"b": out of order: "a"`},
		{"not declared", func(w *Writer) error {
			w.AddTensor("a", TypeF32, 4)
			return w.WriteTensor("c", make([]byte, 16))
		}, `"c": not declared`},
		{"written twice", func(w *Writer) error {
			w.AddTensor("a", TypeF32, 4)
			w.AddTensor("b", TypeF32, 4)
			w.WriteTensor("a", make([]byte, 16))
			return w.WriteTensor("a", make([]byte, 16))
		}, `"a": written twice`},
		{"wrong size", func(w *Writer) error {
			w.AddTensor("a", TypeF16, 4, 2)
			return w.WriteTensor("a", make([]byte, 15))
		}, `"a": 15 bytes, want 16`},
		{"short chunked write", func(w *Writer) error {
			w.AddTensor("a", TypeF32, 4)
			w.AddTensor("b", TypeF32, 4)
			tw, _ := w.Tensor("a")
			tw.Write(make([]byte, 10))
			_, err := w.Tensor("b")
			return err
		}, `"a": short write: 10 of 16 bytes`},
		{"short at close", func(w *Writer) error {
			w.AddTensor("a", TypeF32, 4)
			tw, _ := w.Tensor("a")
			tw.Write(make([]byte, 4))
			return w.Close()
		}, `"a": short write: 4 of 16`},
		{"long chunked write", func(w *Writer) error {
			w.AddTensor("a", TypeF32, 4)
			tw, _ := w.Tensor("a")
			tw.Write(make([]byte, 10))
			_, err := tw.Write(make([]byte, 7))
			return err
		}, `"a": write of 7 bytes with 6 of 16 left`},
		{"missing tensor at close", func(w *Writer) error {
			w.AddTensor("a", TypeF32, 4)
			w.AddTensor("b", TypeF32, 4)
			w.WriteTensor("a", make([]byte, 16))
			return w.Close()
		}, `1 of 2 tensors written; next is "b"`},
		{"partial block", func(w *Writer) error {
			return w.AddTensor("a", TypeQ8_0, 48, 2)
		}, "48 values is not a whole number of Q8_0 blocks"},
		{"zero dimension", func(w *Writer) error { return w.AddTensor("a", TypeF32, 4, 0) }, "dimension 1 is 0"},
		{"five dimensions", func(w *Writer) error { return w.AddTensor("a", TypeF32, 1, 1, 1, 1, 1) }, "5 dimensions"},
		{"long name", func(w *Writer) error { return w.AddTensor(strings.Repeat("x", 64), TypeF32, 1) }, "name longer than 63"},
		{"unknown type", func(w *Writer) error { return w.AddTensor("a", Type(99), 1) }, "unknown type 99"},
		{"duplicate tensor", func(w *Writer) error {
			w.AddTensor("a", TypeF32, 1)
			return w.AddTensor("a", TypeF32, 1)
		}, `"a": declared twice`},
		{"tensor after header", func(w *Writer) error {
			w.WriteHeader()
			return w.AddTensor("a", TypeF32, 1)
		}, "declared after the header"},
		{"key after header", func(w *Writer) error {
			w.WriteHeader()
			w.SetString("k", "v")
			return w.Close()
		}, `"k": set after the header`},
		{"bad alignment", func(w *Writer) error {
			w.SetUint32("general.alignment", 24)
			return w.WriteHeader()
		}, "general.alignment = 24"},
		{"alignment not uint32", func(w *Writer) error {
			w.SetUint64("general.alignment", 64)
			return w.WriteHeader()
		}, "general.alignment must be a uint32"},
		{"array type mismatch", func(w *Writer) error {
			w.SetArray("k", ValueInt32, []float32{1})
			return w.WriteHeader()
		}, `"k": array of value type 5 given a []float32`},
		{"nested array mismatch", func(w *Writer) error {
			w.SetArray("k", ValueArray, []int32{1})
			return w.WriteHeader()
		}, `"k": array of value type 9 given a []int32`},
		{"scalar type mismatch", func(w *Writer) error {
			w.SetValue("k", ValueUint32, int32(1))
			return w.WriteHeader()
		}, `"k": value type 4 given a int32`},
		{"empty key", func(w *Writer) error {
			w.SetBool("", true)
			return w.WriteHeader()
		}, "empty metadata key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run(NewWriter(&bytes.Buffer{}))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestWriterLayout checks the data section layout: every tensor starts at a
// multiple of the alignment and the file ends padded, for alignments that
// are and are not the default.
func TestWriterLayout(t *testing.T) {
	for _, align := range []uint32{0, 32, 64, 1} {
		var buf bytes.Buffer
		w := NewWriter(&buf)
		if align != 0 {
			w.SetUint32("general.alignment", align)
		}
		a := int64(align)
		if align == 0 {
			a = DefaultAlignment
		}
		sizes := []int64{3, 32, 1, 64}
		for i, n := range sizes {
			w.AddTensor(string(rune('a'+i)), TypeI8, n)
		}
		var want int64
		for i, tt := range w.tensors {
			if tt.offset != want || tt.offset%a != 0 {
				t.Errorf("alignment %d: tensor %d offset %d, want %d", a, i, tt.offset, want)
			}
			want += sizes[i] + padding(sizes[i], a)
		}
		if err := w.WriteHeader(); err != nil {
			t.Fatal(err)
		}
		w.out.Flush()
		header := int64(buf.Len())
		if header%a != 0 {
			t.Errorf("alignment %d: data section starts at %d", a, header)
		}
		for i, n := range sizes {
			if err := w.WriteTensor(string(rune('a'+i)), bytes.Repeat([]byte{byte(i + 1)}, int(n))); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got := int64(buf.Len()); got != header+want {
			t.Errorf("alignment %d: file is %d bytes, want %d", a, got, header+want)
		}
		for i, tt := range w.tensors {
			data := buf.Bytes()[header+tt.offset:][:tt.size]
			if !bytes.Equal(data, bytes.Repeat([]byte{byte(i + 1)}, int(tt.size))) {
				t.Errorf("alignment %d: tensor %d data misplaced", a, i)
			}
		}
	}
}
