package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// sse writes server-sent events: one "data: JSON" event per chunk, and
// "data: [DONE]" at the end, as OpenAI's streaming API does.
type sse struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf bytes.Buffer // one event being assembled
	err error        // first write error (the client is gone)
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
	s.flush()
	return s
}

// send writes v as one data event.
func (s *sse) send(v any) {
	if s.err != nil {
		return
	}
	s.buf.Reset()
	s.buf.WriteString("data: ")
	if err := json.NewEncoder(&s.buf).Encode(v); err != nil { // Encode ends with '\n'
		s.err = err
		return
	}
	s.buf.WriteString("\n")
	s.write()
}

// sendError writes err as an error event; the stream then ends with done.
func (s *sse) sendError(err error) {
	s.send(errorBody{Error: toAPIError(err)})
}

// done writes the closing event.
func (s *sse) done() {
	if s.err != nil {
		return
	}
	s.buf.Reset()
	s.buf.WriteString("data: [DONE]\n\n")
	s.write()
}

func (s *sse) write() {
	if _, err := s.w.Write(s.buf.Bytes()); err != nil {
		s.err = err
		return
	}
	s.flush()
}

func (s *sse) flush() {
	if err := s.rc.Flush(); err != nil && s.err == nil {
		s.err = err
	}
}
