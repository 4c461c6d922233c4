package chat

import (
	"errors"
	"fmt"
	"time"

	"github.com/ardanlabs/jinja"
)

// renderState is what the globals of one render share. It lives for one
// render on one goroutine, so it needs no lock.
type renderState struct {
	rangeLimit int    // items range() may produce in one render
	rangeLeft  int    // items range() may still produce in this render
	rangeOver  bool   // a range() call asked for more than rangeLeft
	raised     string // the message of raise_exception, once called
	raisedSet  bool   // raise_exception was called
}

// globals returns the functions a template calls, bound to st. They
// shadow the engine's own range and raise_exception: range counts what it
// produces against the limit before building any list, raise_exception
// is told apart from the template's other failures.
func (st *renderState) globals(now func() time.Time) map[string]jinja.Value {
	return map[string]jinja.Value{
		"range":           jinja.NewCallable("range", st.rangeFn),
		"raise_exception": jinja.NewCallable("raise_exception", st.raise),
		"strftime_now": jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			if len(args) != 1 || !args[0].IsString() {
				return jinja.Undefined(), errors.New("strftime_now: want one format string")
			}
			return jinja.NewString(strftime(now(), args[0].AsString())), nil
		}),
	}
}

// raise records the message and fails the render.
func (st *renderState) raise(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	msg := "raise_exception called"
	if len(args) > 0 {
		msg = args[0].String()
		if args[0].IsString() {
			msg = args[0].AsString()
		}
	}
	st.raised, st.raisedSet = msg, true
	return jinja.Undefined(), errors.New(msg)
}

// errRange marks a range() call that passed the limit.
var errRange = errors.New("range() produced more items than allowed")

// rangeFn is Python's range(stop), range(start, stop[, step]).
func (st *renderState) rangeFn(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	var n [3]int64
	for i, a := range args {
		if i >= 3 || !a.IsInt() {
			return jinja.Undefined(), fmt.Errorf("range: want 1 to 3 integers, got %d arguments", len(args))
		}
		n[i] = a.AsInt()
	}
	var start, stop, step int64
	switch len(args) {
	case 1:
		start, stop, step = 0, n[0], 1
	case 2:
		start, stop, step = n[0], n[1], 1
	case 3:
		start, stop, step = n[0], n[1], n[2]
	default:
		return jinja.Undefined(), fmt.Errorf("range: want 1 to 3 integers, got %d arguments", len(args))
	}
	if step == 0 {
		return jinja.Undefined(), errors.New("range: step must not be zero")
	}
	count := rangeLen(start, stop, step)
	if count > uint64(st.rangeLeft) {
		st.rangeOver = true
		return jinja.Undefined(), errRange
	}
	st.rangeLeft -= int(count)
	items := make([]jinja.Value, count)
	for i := range items {
		items[i] = jinja.NewInt(start + int64(i)*step)
	}
	return jinja.NewList(items), nil
}

// rangeLen is the number of items of range(start, stop, step), step != 0,
// computed without overflow.
func rangeLen(start, stop, step int64) uint64 {
	if step > 0 && start < stop {
		return (uint64(stop)-uint64(start)-1)/uint64(step) + 1
	}
	if step < 0 && start > stop {
		return (uint64(start)-uint64(stop)-1)/uint64(-step) + 1
	}
	return 0
}
