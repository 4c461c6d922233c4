package gguf

import (
	"os"
	"path/filepath"
	"testing"

	"llmserve/internal/shared"
)

// FuzzParse feeds arbitrary bytes to the reader: it must return an error or
// a File whose every accessor and tensor slice stays in bounds.
func FuzzParse(f *testing.F) {
	if dir, err := shared.Dir(); err == nil {
		seeds, _ := filepath.Glob(filepath.Join(dir, "*", "*.gguf"))
		for _, p := range seeds {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			// Headers are where the parsing is; keep the seeds small.
			if len(data) > 1<<16 {
				data = data[:1<<16]
			}
			f.Add(data)
		}
	}
	f.Add([]byte("GGUF\x03\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			return
		}
		for _, kv := range file.KV {
			file.String(kv.Key)
			file.Uint32(kv.Key)
			file.Int64(kv.Key)
			file.Float32(kv.Key)
			file.Bool(kv.Key)
			file.Strings(kv.Key)
			file.Float32s(kv.Key)
			file.Int32s(kv.Key)
		}
		for i := range file.Tensors {
			ti := &file.Tensors[i]
			if int64(len(file.TensorData(ti))) != ti.Size {
				t.Fatalf("tensor %q: data length differs from size %d", ti.Name, ti.Size)
			}
		}
	})
}
