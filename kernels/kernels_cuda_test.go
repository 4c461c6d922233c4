//go:build cuda

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"llmserve/gguf"
	"llmserve/internal/cuda"
	"llmserve/internal/cudatest"
)

// dev is the device every test in the package uses, opened by TestMain.
var dev *Device

// TestMain opens the device; without one the device tests are skipped
// (cudatest.Skip) and the package's CPU tests still run.
func TestMain(m *testing.M) {
	var err error
	dev, err = OpenDevice(0)
	if err != nil {
		if err := cudatest.Skip(os.Stdout, "kernels", err); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(m.Run())
	}
	fmt.Printf("device: %s, %d multiprocessors\n", dev.Context().Name(), dev.Context().Multiprocessors())
	code := m.Run()
	if err := dev.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "close:", err)
		code = 1
	}
	os.Exit(code)
}

// gpuBuffers frees the buffers a test allocates.
type gpuBuffers struct {
	t    testing.TB
	bufs []*cuda.Buffer
}

func newBuffers(t testing.TB) *gpuBuffers {
	g := &gpuBuffers{t: t}
	t.Cleanup(func() {
		for _, b := range g.bufs {
			if err := b.Free(); err != nil {
				t.Errorf("free: %v", err)
			}
		}
	})
	return g
}

// f32 uploads v as a rows × cols device array.
func (g *gpuBuffers) f32(v []float32, rows, cols int) DevF32 {
	g.t.Helper()
	if len(v) != rows*cols {
		g.t.Fatalf("f32: %d values for %d×%d", len(v), rows, cols)
	}
	b, err := cuda.Upload(dev.Context(), "test f32", v)
	if err != nil {
		g.t.Fatal(err)
	}
	g.bufs = append(g.bufs, b)
	return DevF32{b.Ptr(), rows, cols}
}

// poisoned allocates a rows × cols array filled with NaN, so unwritten
// outputs show.
func (g *gpuBuffers) poisoned(rows, cols int) DevF32 {
	g.t.Helper()
	b, err := dev.Context().Alloc("test out", int64(rows*cols)*4)
	if err != nil {
		g.t.Fatal(err)
	}
	g.bufs = append(g.bufs, b)
	if err := b.Fill32(0x7fc00000); err != nil {
		g.t.Fatal(err)
	}
	return DevF32{b.Ptr(), rows, cols}
}

func (g *gpuBuffers) i32(v []int32) DevI32 {
	g.t.Helper()
	b, err := cuda.Upload(dev.Context(), "test i32", v)
	if err != nil {
		g.t.Fatal(err)
	}
	g.bufs = append(g.bufs, b)
	return DevI32{b.Ptr(), len(v)}
}

// matrix uploads data, a rows × cols matrix of type typ in the GGUF
// layout, as stored (wide false) or converted to the wide layout.
func (g *gpuBuffers) matrix(typ gguf.Type, data []byte, rows, cols int, wide bool) DevMatrix {
	g.t.Helper()
	if wide {
		w, err := Widen(typ, data, rows, cols)
		if err != nil {
			g.t.Fatal(err)
		}
		data = w
	}
	return DevMatrix{Type: typ, Rows: rows, Cols: cols, Ptr: g.bytes(data), Wide: wide}
}

// bytes uploads v followed by 256 zero bytes, as the engine places
// weights: the 8-bit kernels may read a word past a matrix's last row.
func (g *gpuBuffers) bytes(v []byte) cuda.DevPtr {
	g.t.Helper()
	b, err := cuda.Upload(dev.Context(), "test bytes", append(slices.Clip(v), make([]byte, 256)...))
	if err != nil {
		g.t.Fatal(err)
	}
	g.bufs = append(g.bufs, b)
	return b.Ptr()
}

// read copies a device array back.
func read(t testing.TB, x DevF32) []float32 {
	t.Helper()
	if err := dev.Sync(); err != nil {
		t.Fatal(err)
	}
	out := make([]float32, x.Len())
	if err := readPtr(x.Ptr, cuda.AsBytes(out)); err != nil {
		t.Fatal(err)
	}
	return out
}

func readI32(t testing.TB, x DevI32) []int32 {
	t.Helper()
	if err := dev.Sync(); err != nil {
		t.Fatal(err)
	}
	out := make([]int32, x.Len)
	if err := readPtr(x.Ptr, cuda.AsBytes(out)); err != nil {
		t.Fatal(err)
	}
	return out
}

func randF32(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// nmse is Σ(got−want)²/Σwant², or +Inf when got has a NaN (an unwritten or
// broken output).
func gpuNMSE(got []float32, want []float64) float64 {
	var num, den float64
	for i, w := range want {
		g := float64(got[i])
		if math.IsNaN(g) || math.IsInf(g, 0) {
			return math.Inf(1)
		}
		num += (g - w) * (g - w)
		den += w * w
	}
	if den == 0 {
		return num
	}
	return num / den
}

// checkNMSE fails when got is farther than tol from want, printing the
// first differing values.
func checkNMSE(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	e := gpuNMSE(got, want)
	if e <= tol {
		return
	}
	msg := ""
	shown := 0
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); (d > 1e-3*math.Abs(want[i])+1e-6 || math.IsNaN(float64(got[i]))) && shown < 5 {
			msg += fmt.Sprintf("\n  [%d] got %g want %g", i, got[i], want[i])
			shown++
		}
	}
	t.Errorf("%s: NMSE %.3g > %.3g%s", what, e, tol, msg)
}

func readPtr(p cuda.DevPtr, dst []byte) error { return dev.Context().ReadAt(p, dst) }

// timeLaunches runs run once to warm up, then b.N times between two waits
// for the device, and reports TFLOP/s for flops operations a run.
func timeLaunches(b *testing.B, flops float64, run func() error) {
	b.Helper()
	if err := run(); err != nil {
		b.Fatal(err)
	}
	if err := dev.Sync(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := run(); err != nil {
			b.Fatal(err)
		}
	}
	if err := dev.Sync(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e12, "TFLOP/s")
}
