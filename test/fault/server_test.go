// Package fault drives the llmserve binary on ../shared/models/stories260K.gguf
// through faults and load: hundreds of streaming clients, clients that vanish
// mid-stream, SIGTERM while streams run, and a full queue. Each test logs
// what it measured.
package fault

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"llmserve/internal/servertest"
	"llmserve/internal/shared"
)

func TestMain(m *testing.M) { servertest.Main(m) }

// startServer runs `llmserve serve` on stories260K on a free port with the
// extra flags and waits until /health answers 200.
func startServer(t *testing.T, flags ...string) *servertest.Server {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the llmserve binary under load: skipped under -short")
	}
	model := shared.Path(t, "models/stories260K.gguf")
	return servertest.Start(t, servertest.Build(t), append([]string{"serve", "--model", model}, flags...)...)
}

// streamResult is how one streamed completion ended.
type streamResult struct {
	status   int           // HTTP status; 0: no response
	err      error         // transport error, or the stream ending before [DONE]
	chunks   int           // chunks with text
	text     string        // the text of the chunks
	done     bool          // [DONE] arrived
	errEvent bool          // an error event arrived
	ttft     time.Duration // to the first chunk with text
	body     string        // the body of a non-200 response
}

// stream posts a streamed completion and reads it to [DONE], calling
// onChunk (when set) after each chunk with text; onChunk returning false
// ends the read (and the request) there.
func stream(ctx context.Context, url string, body map[string]any, onChunk func(n int) bool) streamResult {
	var r streamResult
	body["stream"] = true
	raw, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions", bytes.NewReader(raw))
	if err != nil {
		r.err = err
		return r
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.err = err
		return r
	}
	defer resp.Body.Close()
	r.status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		r.body = string(b)
		return r
	}
	rd := bufio.NewReader(resp.Body)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			r.err = fmt.Errorf("after %d chunks: %w", r.chunks, err)
			return r
		}
		data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			r.done = true
			return r
		}
		var c struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			r.err = fmt.Errorf("chunk %q: %w", data, err)
			return r
		}
		if len(c.Error) > 0 {
			r.errEvent = true
		}
		if len(c.Choices) > 0 && c.Choices[0].Text != "" {
			if r.chunks == 0 {
				r.ttft = time.Since(start)
			}
			r.text += c.Choices[0].Text
			r.chunks++
			if onChunk != nil && !onChunk(r.chunks) {
				return r
			}
		}
	}
}
