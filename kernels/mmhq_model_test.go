package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"llmserve/gguf"
)

// A CPU model of the weight staging of mmhq.cu: WRaw<K>::copy and
// WRaw<K>::deq8 for every layout, written from the kernel line for line,
// and the thread mappings and the pipeline of mmhq<K, ...>. The tests
// check that staging a stage's raw bytes and dequantizing them gives
// gguf.Dequantize's values, that every copy is aligned and reads only the
// matrix, that no two copies write the same staged byte, that deq8 reads
// only bytes copied from the matrix at addresses aligned for their loads,
// that each thread mapping covers its tile once, and that no stage is read
// before its copies have landed behind a barrier nor refilled while a warp
// may still read it. (The ldmatrix and mma.sync part is mmh.cu's: the
// helpers of mma16.cuh in the same fragment loop, modelled by
// mmh_tile_test.go.)

// mmhqModelPiece is one cp.async of WRaw<K>::copy: size bytes (4, 8 or 16)
// into staged-row offset dst from matrix offset src, n of them read (the
// rest zero-filled; src is not read when n is 0).
type mmhqModelPiece struct{ dst, src, n, size int }

// mmhqModelObyte is WRaw<T_Q6_K>::obyte.
const mmhqModelObyte = 116

// mmhqModelCopy is WRaw<kind>::copy of piece u of stage s for the row at
// matrix offset row (valid: the row is in the matrix), and, for Q6_K as
// stored, the misalignment o it stores at mmhqModelObyte (-1: none).
func mmhqModelCopy(kind string, row int, valid bool, s, u, cols int) (mmhqModelPiece, int) {
	n4 := func(ok bool) int {
		if ok {
			return 4
		}
		return 0
	}
	n16 := func(ok bool) int {
		if ok {
			return 16
		}
		return 0
	}
	switch kind {
	case "q8_0":
		return mmhqModelPiece{4 * u, row + 68*s + 4*u, n4(valid), 4}, -1
	case "q8_0_wide":
		if u < 4 {
			return mmhqModelPiece{16 * u, row + 64*s + 16*u, n16(valid), 16}, -1
		}
		return mmhqModelPiece{64, row + cols + 4*s, n4(valid), 4}, -1
	case "q4_0":
		return mmhqModelPiece{4 * u, row + 36*s + 4*u, n4(valid), 4}, -1
	case "q4_k":
		off := 144 * (s >> 2)
		if u > 0 {
			off += 16 + 32*(s&3) + 16*(u-1)
		}
		return mmhqModelPiece{16 * u, row + off, n16(valid), 16}, -1
	case "q5_k":
		off := 176*(s>>2) + 16*u
		if u >= 3 {
			off = 176*(s>>2) + 48 + 32*(s&3) + 16*(u-3)
		}
		return mmhqModelPiece{16 * u, row + off, n16(valid), 16}, -1
	case "q6_k_wide":
		q := s & 3
		n, p := q>>1, q&1
		blk := row + 224*(s>>2)
		if u < 12 {
			off := 64*n + 8*u
			if u >= 8 {
				off = 128 + 32*n + 8*(u-8)
			}
			return mmhqModelPiece{8 * u, blk + off, 8 * n4(valid) / 4, 8}, -1
		}
		off := 208
		if u == 12 {
			off = 192 + 8*n + 4*p
		}
		return mmhqModelPiece{96 + 4*(u-12), blk + off, n4(valid), 4}, -1
	case "q6_k":
		q := s & 3
		n, p := q>>1, q&1
		var off, ln, at, w int
		switch {
		case u < 17:
			off, ln, at, w = 64*n, 64, 0, u
		case u < 26:
			off, ln, at, w = 128+32*n, 32, 68, u-17
		case u < 28:
			off, ln, at, w = 192+8*n+4*p, 4, 104, u-26
		default:
			off, ln, at, w = 208, 2, 112, 0
		}
		o, cnt, word := 0, 0, 0
		if valid {
			f := row + 210*(s>>2) + off
			o = f & 3
			cnt = min(4, max(0, o+ln-4*w))
			if cnt > 0 {
				word = f - o + 4*w
			}
		}
		ob := -1
		if u == 0 {
			ob = o
		}
		return mmhqModelPiece{at + 4*w, word, cnt, 4}, ob
	}
	panic("mmhq model: no layout " + kind)
}

// mmhqModelRow is a staged raw row: its bytes, which of them were copied
// from the matrix (or, for the o byte, stored), and the reads of deq8.
type mmhqModelRow struct {
	b      []byte
	copied []bool
	err    error
}

// ld reads width bytes (little endian) at off, as a load of that width
// (2, 4, 8 or 16 bytes) or, with align 2, as 2-byte loads (ld16x2): the
// address must be aligned for it and every byte copied from the matrix.
func (r *mmhqModelRow) ld(off, width, align int) uint64 {
	if r.err == nil && (off%align != 0 || len(r.b)%align != 0 || off+width > len(r.b)) {
		r.err = fmt.Errorf("load of %d bytes at %d of a %d-byte row: want %d-byte aligned within it, rows at %d-byte multiples", width, off, len(r.b), align, align)
	}
	var v uint64
	for i := min(width, 8) - 1; i >= 0; i-- {
		if off+i < len(r.b) {
			if r.err == nil && !r.copied[off+i] {
				r.err = fmt.Errorf("load of byte %d, which no copy filled", off+i)
			}
			v = v<<8 | uint64(r.b[off+i])
		}
	}
	return v
}

func mmhqH2F(v uint64) float32 { return gguf.FP16ToFP32(uint16(v)) }

// mmhqB2F is quant.cuh's b2f: byte k of v less bias, exactly.
func mmhqB2F(v uint32, k int, bias float32) float32 { return float32((v>>(8*k))&0xFF) - bias }

// mmhqModelDeq8 is WRaw<kind>::deq8: values 8c..8c+7 of stage s of the
// staged row r.
func mmhqModelDeq8(kind string, r *mmhqModelRow, s, c int) [8]float32 {
	var v [8]float32
	switch kind {
	case "q8_0", "q8_0_wide":
		var d float32
		var w [2]uint32
		if kind == "q8_0" {
			b := 34 * (c >> 2)
			d = mmhqH2F(r.ld(b, 2, 2))
			q := b + 2 + 8*(c&3)
			w = [2]uint32{uint32(r.ld(q, 4, 2)), uint32(r.ld(q+4, 4, 2))}
		} else {
			d = mmhqH2F(r.ld(64+2*(c>>2), 2, 2))
			q := r.ld(8*c, 8, 8)
			w = [2]uint32{uint32(q), uint32(q >> 32)}
		}
		for i := 0; i < 2; i++ {
			x := w[i] ^ 0x80808080
			for k := 0; k < 4; k++ {
				v[4*i+k] = d * mmhqB2F(x, k, 128)
			}
		}
	case "q4_0":
		b := 18 * (c >> 2)
		d := mmhqH2F(r.ld(b, 2, 2))
		m := c & 3
		q := b + 2 + 8*(m&1)
		sh := 4 * (m >> 1)
		for i := 0; i < 2; i++ {
			n := (uint32(r.ld(q+4*i, 4, 2)) >> sh) & 0x0F0F0F0F
			for k := 0; k < 4; k++ {
				v[4*i+k] = d * mmhqB2F(n, k, 8)
			}
		}
	case "q4_k":
		r.ld(0, 16, 16) // the kernel reads the head as one uint4
		hdr := r.b[:16]
		d, dmin := gguf.FP16ToFP32(binary.LittleEndian.Uint16(hdr)), gguf.FP16ToFP32(binary.LittleEndian.Uint16(hdr[2:]))
		g := c >> 2
		sc, m := gguf.ScaleMinK4(2*(s&3)+g, hdr[4:16])
		dl, ml := d*float32(sc), dmin*float32(m)
		q := r.ld(16+8*(c&3), 8, 8)
		w := [2]uint32{uint32(q), uint32(q >> 32)}
		for i := 0; i < 2; i++ {
			n := (w[i] >> (4 * g)) & 0x0F0F0F0F
			for k := 0; k < 4; k++ {
				v[4*i+k] = float32(dl*mmhqB2F(n, k, 0)) - ml
			}
		}
	case "q5_k":
		r.ld(0, 16, 16) // the head as one uint4
		hdr := r.b[:16]
		d, dmin := gguf.FP16ToFP32(binary.LittleEndian.Uint16(hdr)), gguf.FP16ToFP32(binary.LittleEndian.Uint16(hdr[2:]))
		g := c >> 2
		j := 2*(s&3) + g
		sc, m := gguf.ScaleMinK4(j, hdr[4:16])
		dl, ml := d*float32(sc), dmin*float32(m)
		q, h := r.ld(48+8*(c&3), 8, 8), r.ld(16+8*(c&3), 8, 8)
		w, hb := [2]uint32{uint32(q), uint32(q >> 32)}, [2]uint32{uint32(h), uint32(h >> 32)}
		for i := 0; i < 2; i++ {
			n := (w[i]>>(4*g))&0x0F0F0F0F | ((hb[i]>>j)&0x01010101)<<4
			for k := 0; k < 4; k++ {
				v[4*i+k] = float32(dl*mmhqB2F(n, k, 0)) - ml
			}
		}
	case "q6_k", "q6_k_wide":
		ql, qh, sc, dAt, align := 0, 64, 96, 100, 4 // q6_deq8<true>: 4-byte loads
		if kind == "q6_k" {
			o := int(r.ld(mmhqModelObyte, 1, 1))
			ql, qh, sc, dAt, align = o, 68+o, 104+o, 112+o, 2
		}
		d := mmhqH2F(r.ld(dAt, 2, 2))
		g, l0, p := c>>2, 8*(c&3), s&1
		dd := d * float32(int8(r.ld(sc+2*g+(l0>>4), 1, 1)))
		for i := 0; i < 2; i++ {
			lo := (uint32(r.ld(ql+32*g+l0+4*i, 4, align)) >> (4 * p)) & 0x0F0F0F0F
			hi := (uint32(r.ld(qh+l0+4*i, 4, align)) >> (2 * (2*p + g))) & 0x03030303
			n := lo | hi<<4
			for k := 0; k < 4; k++ {
				v[4*i+k] = dd * mmhqB2F(n, k, 32)
			}
		}
	default:
		panic("mmhq model: no layout " + kind)
	}
	return v
}

// mmhqModelMatrix is a random rows × cols matrix of kind's type with sane
// f16 scales, in GGUF layout and in the layout kind reads (the wide one
// for the _wide kinds), and its row stride in the latter.
func mmhqModelMatrix(rng *rand.Rand, kind string, rows, cols int) (data, stored []byte, rb int) {
	var typ gguf.Type
	var wide bool
	for _, k := range mmhqKinds {
		if k.name == kind {
			typ, wide = k.typ, k.wide
		}
	}
	grb, err := typ.RowBytes(int64(cols))
	if err != nil {
		panic(err)
	}
	data = make([]byte, rows*int(grb))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	scales := map[gguf.Type][]int{gguf.TypeQ8_0: {0}, gguf.TypeQ4_0: {0}, gguf.TypeQ4_K: {0, 2}, gguf.TypeQ5_K: {0, 2}, gguf.TypeQ6_K: {208}}[typ]
	ts := typ.TypeSize()
	for blk := 0; blk < len(data)/ts; blk++ {
		for _, off := range scales {
			binary.LittleEndian.PutUint16(data[blk*ts+off:], gguf.FP32ToFP16(float32((0.5+rng.Float64())/64)))
		}
	}
	if !wide {
		return data, data, int(grb)
	}
	stored, err = Widen(typ, data, rows, cols)
	if err != nil {
		panic(err)
	}
	wrb, _ := WideRowBytes(typ, cols)
	return data, stored, int(wrb)
}

// mmhqModelStage stages stage s of weight row r (of rows; rows past them
// are zero-filled) as the kernel's copies do, checking each copy.
func mmhqModelStage(kind string, stored []byte, rb, r, rows, s, cols int) (*mmhqModelRow, error) {
	stride, pieces := 0, 0
	for _, k := range mmhqKinds {
		if k.name == kind {
			stride, pieces = k.stride, k.pieces
		}
	}
	row := &mmhqModelRow{b: make([]byte, stride), copied: make([]bool, stride)}
	written := make([]bool, stride)
	valid := r < rows
	at := 0
	if valid {
		at = r * rb
	}
	for u := 0; u < pieces; u++ {
		pc, ob := mmhqModelCopy(kind, at, valid, s, u, cols)
		if pc.dst%pc.size != 0 || stride%pc.size != 0 || pc.dst+pc.size > stride {
			return nil, fmt.Errorf("piece %d: %d bytes at staged offset %d of a %d-byte row: misaligned or past it", u, pc.size, pc.dst, stride)
		}
		if pc.n > 0 && (pc.src%pc.size != 0 || pc.src < 0 || pc.src+pc.n > len(stored)) {
			return nil, fmt.Errorf("piece %d: %d bytes from matrix offset %d (of %d): misaligned for a %d-byte copy or outside the matrix", u, pc.n, pc.src, len(stored), pc.size)
		}
		for i := 0; i < pc.size; i++ {
			if written[pc.dst+i] {
				return nil, fmt.Errorf("piece %d: staged byte %d written twice", u, pc.dst+i)
			}
			written[pc.dst+i] = true
			if i < pc.n {
				row.b[pc.dst+i], row.copied[pc.dst+i] = stored[pc.src+i], true
			}
		}
		if ob >= 0 {
			if mmhqModelObyte < stride && written[mmhqModelObyte] {
				return nil, fmt.Errorf("the o byte %d is also a copy's", mmhqModelObyte)
			}
			row.b[mmhqModelObyte], row.copied[mmhqModelObyte] = byte(ob), true
		}
	}
	if !valid {
		for i := range row.copied {
			row.copied[i] = true // zero-filled: deq8 may read any of it
		}
	}
	return row, nil
}

// TestMatMulQ16StagingModel checks, for every layout of mmhqKinds, on
// random matrices whose odd row counts leave Q6_K rows at both
// misalignments, that staging and dequantizing every stage of every row
// gives gguf.Dequantize's values bit for bit (every product of a scale and
// a quant is exact in f32, so the kernel's f32 values are the reference's
// whether or not it fuses Q4_K's d·sc·q − dmin·m), and that a row past the
// matrix stages as zeros.
func TestMatMulQ16StagingModel(t *testing.T) {
	shapes := [][2]int{{3, 256}, {5, 768}, {2, 1024}}
	for _, k := range mmhqKinds {
		for _, sh := range shapes {
			rows, cols := sh[0], sh[1]
			if mmhqKindOf(k.typ, rows, cols, k.wide) != k.name {
				t.Fatalf("%s: mmhqKindOf(%v, %d, %d, %v) = %q", k.name, k.typ, rows, cols, k.wide, mmhqKindOf(k.typ, rows, cols, k.wide))
			}
			t.Run(fmt.Sprintf("%s/%dx%d", k.name, rows, cols), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(rows), uint64(cols)))
				data, stored, rb := mmhqModelMatrix(rng, k.name, rows, cols)
				grb := len(data) / rows
				want := make([]float32, cols)
				checked, misaligned := 0, 0
				for r := 0; r <= rows; r++ { // row rows: past the matrix
					if r < rows {
						if err := gguf.Dequantize(k.typ, data[r*grb:(r+1)*grb], want); err != nil {
							t.Fatal(err)
						}
					}
					for s := 0; s < cols/mmhqBK; s++ {
						row, err := mmhqModelStage(k.name, stored, rb, r, rows, s, cols)
						if err != nil {
							t.Fatalf("row %d stage %d: %v", r, s, err)
						}
						if k.name == "q6_k" && row.b[mmhqModelObyte] != 0 {
							misaligned++
						}
						for c := 0; c < mmhqBK/8; c++ {
							got := mmhqModelDeq8(k.name, row, s, c)
							if row.err != nil {
								t.Fatalf("row %d stage %d chunk %d: %v", r, s, c, row.err)
							}
							for i, v := range got {
								w := float32(0)
								if r < rows {
									w = want[mmhqBK*s+8*c+i]
								}
								// Past the matrix, d = 0 may give −0.
								if math.Float32bits(v) != math.Float32bits(w) && !(r == rows && v == 0) {
									t.Fatalf("row %d value %d: %g staged, %g by gguf", r, mmhqBK*s+8*c+i, v, w)
								}
								checked++
							}
						}
					}
				}
				if checked != (rows+1)*cols {
					t.Fatalf("checked %d values, want %d", checked, (rows+1)*cols)
				}
				if k.name == "q6_k" && misaligned == 0 {
					t.Errorf("no Q6_K row staged at a misaligned address: the test misses o = 2")
				}
			})
		}
	}
}

// TestMatMulQ16ThreadMaps checks the thread mappings of every tile: the
// copy loop issues each (row, piece) once, the X copies and the
// dequantization cover each (row, 8-value chunk) once with whole shares
// per thread, and the shared memory fits the H200's 227 KiB a block, its
// stages and Wh 16-byte aligned.
func TestMatMulQ16ThreadMaps(t *testing.T) {
	const chunks = mmhqBK / 8
	for _, tile := range mmhqTiles {
		threads := tile.threads()
		for _, k := range mmhqKinds {
			seen := make([]int, tile.rows*k.pieces)
			for tid := 0; tid < threads; tid++ {
				for idx := tid; idx < tile.rows*k.pieces; idx += threads {
					seen[(idx/k.pieces)*k.pieces+idx%k.pieces]++
				}
			}
			for i, n := range seen {
				if n != 1 {
					t.Errorf("%v %s: row %d piece %d issued %d times", tile, k.name, i/k.pieces, i%k.pieces, n)
				}
			}
			stage := tile.batch*tile.lds()*2 + tile.rows*k.stride
			if stage%16 != 0 {
				t.Errorf("%v %s: a stage of %d bytes leaves the next unaligned", tile, k.name, stage)
			}
			if n := mmhqShared(k.name, tile); n > 227*1024 {
				t.Errorf("%v %s: %d bytes of shared memory", tile, k.name, n)
			}
		}
		for _, n := range []int{tile.rows, tile.batch} {
			if n*chunks%threads != 0 || threads%chunks != 0 {
				t.Fatalf("%v: %d rows of %d chunks over %d threads", tile, n, chunks, threads)
			}
			seen := make([]int, n*chunks)
			for tid := 0; tid < threads; tid++ {
				for j := 0; j < n*chunks/threads; j++ {
					i, c := tid/chunks+j*(threads/chunks), tid%chunks
					if i >= n {
						t.Fatalf("%v: thread %d share %d: row %d of %d", tile, tid, j, i, n)
					}
					seen[i*chunks+c]++
				}
			}
			for i, s := range seen {
				if s != 1 {
					t.Errorf("%v: row %d chunk %d covered %d times", tile, i/chunks, i%chunks, s)
				}
			}
		}
	}
}

// TestMatMulQ16PipelineModel runs the loop of mmhq<K, ...> (issue, commit,
// wait_group, the two barriers, dequantization into Wh, the products) for
// every staging in flight and number of stages, and checks that each
// stage's copies have landed (wait_group<STAGES-2> by every thread) before
// the barrier that precedes its reads, that no buffer is refilled nor Wh
// rewritten in an interval between barriers that may still read it, and
// that every stage is dequantized and multiplied exactly once, in order.
func TestMatMulQ16PipelineModel(t *testing.T) {
	for _, inFlight := range []int{2, 3, 4} {
		for stages := 1; stages <= 9; stages++ {
			if err := mmhqModelPipeline(inFlight, stages); err != nil {
				t.Errorf("%d stages in flight, %d stages: %v", inFlight, stages, err)
			}
		}
	}
}

func mmhqModelPipeline(S, stages int) error {
	interval := 0                   // barriers so far
	holds := make([]int, S)         // the stage each buffer was last filled with (-1: none)
	lastRead := make([]int, S)      // the interval of each buffer's last read (-1: none)
	landedAt := make([]int, stages) // the interval after whose start barrier stage s's copies are visible (-1: not yet)
	var groups [][]int              // committed groups: the stages they copy (0 or 1)
	pending := 0                    // groups committed but not waited for
	whStage, whWritten, whRead := -1, -1, -1
	for i := range holds {
		holds[i], lastRead[i] = -1, -1
	}
	for i := range landedAt {
		landedAt[i] = -1
	}
	issue := func(s int) error {
		b := s % S
		if lastRead[b] == interval {
			return fmt.Errorf("stage %d refills buffer %d in the interval that reads it", s, b)
		}
		holds[b] = s
		return nil
	}
	commit := func(s int) {
		if s >= 0 {
			groups = append(groups, []int{s})
		} else {
			groups = append(groups, nil)
		}
		pending++
	}
	wait := func(n int) {
		for pending > n {
			g := groups[len(groups)-pending]
			for _, s := range g {
				landedAt[s] = interval + 1 // visible to all after the next barrier
			}
			pending--
		}
	}
	read := func(s int) error {
		b := s % S
		if holds[b] != s {
			return fmt.Errorf("stage %d read from buffer %d, which holds stage %d", s, b, holds[b])
		}
		if landedAt[s] < 0 || landedAt[s] > interval {
			return fmt.Errorf("stage %d read in interval %d before its copies are visible", s, interval)
		}
		lastRead[b] = interval
		return nil
	}
	for s := 0; s < S-1; s++ {
		if s < stages {
			if err := issue(s); err != nil {
				return err
			}
			commit(s)
		} else {
			commit(-1)
		}
	}
	done := 0
	for s := 0; s < stages; s++ {
		wait(S - 2)
		interval++ // __syncthreads
		if n := s + S - 1; n < stages {
			if err := issue(n); err != nil {
				return err
			}
			commit(n)
		} else {
			commit(-1)
		}
		if err := read(s); err != nil { // dequantize the raw W of stage s
			return err
		}
		if whRead == interval {
			return fmt.Errorf("Wh rewritten in the interval that reads it")
		}
		whStage, whWritten = s, interval
		interval++                      // __syncthreads
		if err := read(s); err != nil { // the X tile of stage s
			return err
		}
		if whStage != s || whWritten >= interval {
			return fmt.Errorf("stage %d multiplied from Wh of stage %d written in interval %d", s, whStage, whWritten)
		}
		whRead = interval
		done++
	}
	wait(0)
	if done != stages || pending != 0 {
		return fmt.Errorf("%d stages multiplied of %d, %d groups outstanding", done, stages, pending)
	}
	return nil
}
