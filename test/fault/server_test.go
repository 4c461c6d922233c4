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
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"llmserve/internal/shared"
)

// binary is the llmserve executable TestMain builds for the package.
var binary string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "llmserve-fault")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "llmserve")
	build := exec.Command("go", "build", "-o", binary, "llmserve/cmd/llmserve")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "fault: building llmserve:", err)
		return 1
	}
	return m.Run()
}

// server is one llmserve process under test.
type server struct {
	t    *testing.T
	cmd  *exec.Cmd
	url  string        // http://127.0.0.1:port
	done chan struct{} // closed when the process has exited
	err  error         // the process's exit; read after done

	mu  sync.Mutex   // guards log
	log bytes.Buffer // the process's stderr so far
}

var listenAddr = regexp.MustCompile(`"addr":"(http://[^"]+)"`)

// startServer runs `llmserve serve` on stories260K on a free port with the
// extra flags and waits until /health answers 200.
func startServer(t *testing.T, flags ...string) *server {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the llmserve binary under load: skipped under -short")
	}
	model := shared.Path(t, "models/stories260K.gguf")
	args := append([]string{"serve", "--model", model, "--port", "0"}, flags...)
	s := &server{t: t, cmd: exec.Command(binary, args...), done: make(chan struct{})}
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.log.WriteString(line + "\n")
			s.mu.Unlock()
			if m := listenAddr.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			s.cmd.Process.Kill()
			<-s.done
		}
		if t.Failed() {
			t.Logf("server log:\n%s", s.logText())
		}
	})
	select {
	case s.url = <-addr:
	case <-s.done:
		t.Fatalf("llmserve exited at start (%v):\n%s", s.err, s.logText())
	case <-time.After(30 * time.Second):
		t.Fatalf("llmserve printed no address:\n%s", s.logText())
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(s.url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/health not ready (%v):\n%s", err, s.logText())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *server) logText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// waitLog waits until the log holds text.
func (s *server) waitLog(text string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if strings.Contains(s.logText(), text) {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// metric reads one unlabeled sample of GET /metrics.
func (s *server) metric(name string) (float64, error) {
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("no %s in /metrics", name)
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
