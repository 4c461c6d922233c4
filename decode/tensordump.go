package decode

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
)

// DirDump writes every intermediate handed to Dump to a folder: one file
// of little-endian f32 values per name and token position,
// "NAME.pPOS.sSEQ.f32", and a line per file in index.tsv (name, position,
// sequence, value count, file name), so a run can be set beside llama.cpp's
// eval-callback output name by name.
type DirDump struct {
	dir   string
	index *os.File      // index.tsv
	w     *bufio.Writer // buffers index
	buf   []byte        // one file's bytes, reused
	err   error         // the first write error; later dumps are dropped
}

// NewDirDump creates dir (when absent) and its index.
func NewDirDump(dir string) (*DirDump, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("decode: dump: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, "index.tsv"))
	if err != nil {
		return nil, fmt.Errorf("decode: dump: %w", err)
	}
	d := &DirDump{dir: dir, index: f, w: bufio.NewWriter(f)}
	fmt.Fprintln(d.w, "name\tpos\tseq\tvalues\tfile")
	return d, nil
}

// Dump writes one intermediate; it is a TensorDump.
func (d *DirDump) Dump(name string, pos, seq int32, values []float32) {
	if d.err != nil {
		return
	}
	file := fmt.Sprintf("%s.p%d.s%d.f32", name, pos, seq)
	d.buf = d.buf[:0]
	for _, v := range values {
		d.buf = binary.LittleEndian.AppendUint32(d.buf, math.Float32bits(v))
	}
	if err := os.WriteFile(filepath.Join(d.dir, file), d.buf, 0o644); err != nil {
		d.err = fmt.Errorf("decode: dump: %w", err)
		return
	}
	fmt.Fprintf(d.w, "%s\t%d\t%d\t%d\t%s\n", name, pos, seq, len(values), file)
}

// Close flushes the index and returns the first error of any dump.
func (d *DirDump) Close() error {
	err := d.w.Flush()
	if cerr := d.index.Close(); err == nil {
		err = cerr
	}
	if d.err != nil {
		return d.err
	}
	if err != nil {
		return fmt.Errorf("decode: dump: %w", err)
	}
	return nil
}
