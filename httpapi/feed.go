package httpapi

import (
	"context"
	"reflect"

	"llmserve/decode"
)

// indexed is an event of the prompt with the given index.
type indexed struct {
	index int
	ev    decode.Event
}

// feed hands the events of a request's streams to its handler in batches:
// each batch holds everything the scheduler queued since the last one, so
// a handler that falls behind catches up with one write instead of one per
// token, and no goroutine sits between the scheduler and the handler.
type feed struct {
	ctx     context.Context
	streams []*decode.Stream     // one per prompt, in prompt order
	ended   []bool               // [len(streams)] the stream's final event was taken
	live    int                  // streams not ended
	cases   []reflect.SelectCase // [len(streams)+1] Ready of each live stream, then ctx.Done; only with several streams
	batch   []indexed            // the batch being returned, reused
	drained []decode.Event       // one stream's drained events, reused
}

func newFeed(ctx context.Context, streams []*decode.Stream) *feed {
	f := &feed{ctx: ctx, streams: streams, ended: make([]bool, len(streams)), live: len(streams)}
	if len(streams) > 1 {
		f.cases = make([]reflect.SelectCase, len(streams)+1)
		for i, st := range streams {
			f.cases[i] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(st.Ready())}
		}
		f.cases[len(streams)] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())}
	}
	return f
}

// next waits for events and returns every one queued, in order within each
// stream; the slice is reused by the following call. It returns nil once
// every stream has ended, or when ctx ends.
func (f *feed) next() []indexed {
	f.batch = f.batch[:0]
	for f.live > 0 && f.ctx.Err() == nil {
		for i, st := range f.streams {
			if f.ended[i] {
				continue
			}
			var end bool
			f.drained, end = st.Drain(f.drained[:0])
			for _, ev := range f.drained {
				f.batch = append(f.batch, indexed{i, ev})
			}
			clear(f.drained)
			if end {
				f.ended[i] = true
				f.live--
				if f.cases != nil {
					f.cases[i].Chan = reflect.Value{} // ignored by Select from now on
				}
			}
		}
		if len(f.batch) > 0 {
			return f.batch
		}
		if f.live > 0 && !f.wait() {
			return nil
		}
	}
	return nil
}

// wait blocks until a live stream may have events; false when ctx ended.
func (f *feed) wait() bool {
	if f.cases == nil {
		select {
		case <-f.streams[0].Ready():
			return true
		case <-f.ctx.Done():
			return false
		}
	}
	chosen, _, _ := reflect.Select(f.cases)
	return chosen < len(f.streams)
}
