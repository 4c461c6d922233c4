package badinput

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// buildBinary builds cmd/llmserve into a temporary folder.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "llmserve")
	gocmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(gocmd, "build", "-o", bin, "llmserve/cmd/llmserve").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// server is a running llmserve.
type server struct {
	addr, key string
	log       *lockedBuffer
}

// lockedBuffer collects the server's log.
type lockedBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startServer runs the binary on model with a 256-token context and
// waits for /health to answer 200.
func startServer(t *testing.T, bin, model, key string) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	args := []string{"--model", model, "--port", strconv.Itoa(port), "-c", "256", "-np", "2", "--alias", "stories", "--threads", "1"}
	if key != "" {
		args = append(args, "--api-key", key)
	}
	s := &server{addr: fmt.Sprintf("127.0.0.1:%d", port), key: key, log: &lockedBuffer{}}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "LLMSERVE_API_KEY=")
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("log of the server on %s (last 4000 bytes):\n%s", s.addr, tail(s.log.String(), 4000))
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if st, _, err := s.get("/health"); err == nil && st == http.StatusOK {
			return s
		}
		select {
		case err := <-exited:
			t.Fatalf("server exited: %v\n%s", err, s.log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not healthy after 30s\n%s", s.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// get sends a GET with the key on a fresh connection, closed after.
func (s *server) get(path string) (int, []byte, error) {
	req := "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
	if s.key != "" {
		req += "Authorization: Bearer " + s.key + "\r\n"
	}
	r, err := exchange(s.addr, []byte(req+"\r\n"), 10*time.Second)
	if err != nil {
		return 0, nil, err
	}
	return r.status, r.body, nil
}

// gauges reads the named gauges from /metrics.
func (s *server) gauges(t *testing.T, names ...string) map[string]float64 {
	t.Helper()
	st, body, err := s.get("/metrics")
	if err != nil || st != http.StatusOK {
		t.Fatalf("/metrics: %d %v", st, err)
	}
	out := map[string]float64{}
	for line := range strings.SplitSeq(string(body), "\n") {
		name, v, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		for _, n := range names {
			if name == n {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatalf("metric %q: %v", line, err)
				}
				out[n] = f
			}
		}
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			t.Fatalf("/metrics lacks %s", n)
		}
	}
	return out
}

// reply is what a raw exchange got back.
type reply struct {
	status      int
	contentType string
	body        []byte
	closed      bool // the server closed the connection (nothing or after the response)
	err         error
}

// exchange writes req on a new connection and reads one response; the
// server may also close without one (closed set, status 0).
func exchange(addr string, req []byte, timeout time.Duration) (reply, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return reply{}, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	// Write while reading: the server may answer before the body is in.
	go conn.Write(req)
	return readReply(conn)
}

func readReply(conn net.Conn) (reply, error) {
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		if isClose(err) {
			return reply{closed: true}, nil
		}
		return reply{}, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	r := reply{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: body, closed: resp.Close}
	if err != nil && !isClose(err) {
		return r, fmt.Errorf("reading the body: %w", err)
	}
	return r, nil
}

// isClose reports whether err is the peer closing (EOF or reset).
func isClose(err error) bool {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "connection reset") || strings.Contains(s, "broken pipe") || strings.HasSuffix(s, "EOF")
}
