package synth

import (
	"fmt"
	"sync"

	"llmserve/gguf"
)

// chunkValues is the number of values a chunk aims at: big enough to keep
// the per-chunk overhead small, small enough that the chunks in flight (two
// per worker) stay in the tens of megabytes.
const chunkValues = 1 << 20

// chunk is a run of whole rows of one tensor, generated and encoded by a
// worker.
type chunk struct {
	t     *plannedTensor
	row0  int64       // first row
	rows  int64       // row count
	first bool        // the tensor's first chunk
	done  chan result // receives the encoded rows; buffered, so workers never block
}

// result is a finished chunk.
type result struct {
	data *[]byte // encoded rows, from the buffer pool
	err  error
}

// writeTensors generates, encodes and writes every tensor of plan in order.
// A producer hands chunks to the workers and, in the same order, to this
// goroutine, which writes each chunk as soon as it and all before it are
// done. At most 2·workers chunks are in flight.
func writeTensors(w *gguf.Writer, plan []plannedTensor, c *Config, workers int) error {
	work := make(chan *chunk)
	order := make(chan *chunk, 2*workers)
	stop := make(chan struct{})
	var pool sync.Pool // of *[]byte holding encoded chunks
	var wg sync.WaitGroup

	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(work)
		defer close(order)
		produceChunks(plan, order, work, stop)
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			encodeChunks(work, c, &pool)
		}()
	}

	err := consumeChunks(w, order, &pool)
	close(stop)
	for range order { // let the producer finish if it is blocked
	}
	wg.Wait()
	return err
}

// produceChunks splits every tensor into chunks and sends each to order and
// then to work, until stop is closed.
func produceChunks(plan []plannedTensor, order, work chan<- *chunk, stop <-chan struct{}) {
	for i := range plan {
		t := &plan[i]
		rows := t.rows()
		step := max(1, chunkValues/t.rowLen())
		for row0 := int64(0); row0 < rows; row0 += step {
			ch := &chunk{t: t, row0: row0, rows: min(step, rows-row0), first: row0 == 0, done: make(chan result, 1)}
			select {
			case order <- ch:
			case <-stop:
				return
			}
			select {
			case work <- ch:
			case <-stop:
				return
			}
		}
	}
}

// encodeChunks generates and encodes chunks from work until it is closed.
func encodeChunks(work <-chan *chunk, c *Config, pool *sync.Pool) {
	filler := newRowFiller()
	var values []float32 // scratch for one chunk's values
	for ch := range work {
		t := ch.t
		n := ch.rows * t.rowLen()
		if int64(cap(values)) < n {
			values = make([]float32, n)
		}
		values = values[:n]
		filler.fill(&t.tensorSpec, c, t.key, ch.row0, values)
		size, err := t.typ.RowBytes(n)
		if err != nil {
			ch.done <- result{err: fmt.Errorf("synth: tensor %q: %w", t.name, err)}
			continue
		}
		buf, _ := pool.Get().(*[]byte)
		if buf == nil || int64(cap(*buf)) < size {
			b := make([]byte, size)
			buf = &b
		}
		*buf = (*buf)[:size]
		if err := gguf.Quantize(t.typ, values, *buf); err != nil {
			ch.done <- result{err: fmt.Errorf("synth: tensor %q: %w", t.name, err)}
			continue
		}
		ch.done <- result{data: buf}
	}
}

// consumeChunks writes chunks in order as they finish.
func consumeChunks(w *gguf.Writer, order <-chan *chunk, pool *sync.Pool) error {
	var tw *gguf.TensorWriter
	for ch := range order {
		res := <-ch.done
		if res.err != nil {
			return res.err
		}
		if ch.first {
			var err error
			if tw, err = w.Tensor(ch.t.name); err != nil {
				return fmt.Errorf("synth: %w", err)
			}
		}
		if _, err := tw.Write(*res.data); err != nil {
			return fmt.Errorf("synth: %w", err)
		}
		pool.Put(res.data)
	}
	return nil
}
