package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// sse writes server-sent events: one "data: JSON" event per chunk, and
// "data: [DONE]" at the end, as OpenAI's streaming API does. Events are
// gathered by send and leave together at flush, with one write.
type sse struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf []byte        // events sent since the last flush
	js  bytes.Buffer  // one value encoded by enc
	enc *json.Encoder // writes into js
	err error         // first write error (the client is gone)
}

// startSSE sends the event-stream headers.
func startSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sse{w: w, rc: http.NewResponseController(w)}
	s.enc = json.NewEncoder(&s.js)
	s.flush()
	return s
}

// send adds v as one data event; it leaves at the next flush. A
// jsonAppender writes itself; any other value goes through encoding/json.
func (s *sse) send(v any) {
	if s.err != nil {
		return
	}
	mark := len(s.buf)
	s.buf = append(s.buf, "data: "...)
	if a, ok := v.(jsonAppender); ok {
		s.buf = a.appendJSON(s.buf)
		s.buf = append(s.buf, "\n\n"...)
		return
	}
	s.js.Reset()
	if err := s.enc.Encode(v); err != nil { // Encode ends with '\n'
		s.buf = s.buf[:mark]
		s.err = err
		return
	}
	s.buf = append(s.buf, s.js.Bytes()...)
	s.buf = append(s.buf, '\n')
}

// sendError adds err as an error event; the stream then ends with done.
func (s *sse) sendError(err error) {
	s.send(errorBody{Error: toAPIError(err)})
}

// done writes the closing event and everything before it.
func (s *sse) done() {
	if s.err == nil {
		s.buf = append(s.buf, "data: [DONE]\n\n"...)
	}
	s.flush()
}

// flush writes the events sent so far and pushes them to the client.
func (s *sse) flush() {
	if s.err != nil {
		return
	}
	if len(s.buf) > 0 {
		_, err := s.w.Write(s.buf)
		s.buf = s.buf[:0]
		if err != nil {
			s.err = err
			return
		}
	}
	if err := s.rc.Flush(); err != nil {
		s.err = err
	}
}

// finish ends a stream whose events have all been sent: an error event
// when the request's context ended first (client gone, timeout), else the
// usage chunk usage builds when the client asked for one; then [DONE].
func (s *sse) finish(g generation, usage func() any) {
	if err := g.ctx.Err(); err != nil {
		s.sendError(err)
	} else if g.includeUsage {
		s.send(usage())
	}
	s.done()
}
