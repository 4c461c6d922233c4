package servertest

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	// startTimeout bounds the wait from the start until /health answers 200.
	startTimeout = 30 * time.Second
	// logTail is how much of the log a failed test prints.
	logTail = 8000
)

// Server is one llmserve process started by Start.
type Server struct {
	URL  string // http://127.0.0.1:port
	Addr string // 127.0.0.1:port
	Key  string // the --api-key among the arguments, sent by Get; "": none

	cmd    *exec.Cmd
	log    *Log
	client *http.Client  // Get's client: a new connection per request, closed after
	done   chan struct{} // closed when the process has exited
	err    error         // how the process exited; read after done
}

// listenLine is serve's log record of the address it listens on.
var listenLine = regexp.MustCompile(`"addr":"http://([^"]+)"`)

// Start runs bin with args and --port 0 (it listens on a free port of
// 127.0.0.1, the default host) and waits until /health answers 200. While
// the model loads /health must answer 503 with a "loading" status; any other
// answer fails the test. LLMSERVE_API_KEY is cleared, so only an --api-key
// in args sets a key. When the test ends the process is killed, and a
// failed test prints the tail of its log.
func Start(tb testing.TB, bin string, args ...string) *Server {
	tb.Helper()
	s := &Server{
		Key:    flagValue(args, "--api-key"),
		log:    &Log{},
		client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second},
		done:   make(chan struct{}),
	}
	s.cmd = exec.Command(bin, append(slices.Clone(args), "--port", "0")...)
	s.cmd.Env = append(os.Environ(), "LLMSERVE_API_KEY=")
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	// Children that keep the output open must not hold up Wait.
	s.cmd.WaitDelay = 5 * time.Second
	if err := s.cmd.Start(); err != nil {
		tb.Fatalf("servertest: starting %s: %v", bin, err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	tb.Cleanup(func() {
		s.cmd.Process.Kill() // fails harmlessly when the process is gone
		<-s.done
		if tb.Failed() {
			tb.Logf("log of llmserve %s on %s (last %d bytes):\n%s", strings.Join(args, " "), s.Addr, logTail, s.log.Tail(logTail))
		}
	})
	if err := s.waitHealthy(); err != nil {
		tb.Fatalf("servertest: %v", err) // the cleanup prints the log
	}
	return s
}

// flagValue returns the value after name in args, or "".
func flagValue(args []string, name string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// waitHealthy waits for the listen record in the log, then polls /health
// until it answers 200.
func (s *Server) waitHealthy() error {
	deadline := time.Now().Add(startTimeout)
	for ; time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case <-s.done:
			return fmt.Errorf("llmserve exited at start: %v", s.err)
		default:
		}
		if s.Addr == "" {
			m := listenLine.FindStringSubmatch(s.log.String())
			if m == nil {
				continue
			}
			s.Addr, s.URL = m[1], "http://"+m[1]
		}
		status, body, err := s.Get("/health")
		if err != nil {
			continue
		}
		if status == http.StatusOK {
			return nil
		}
		if status != http.StatusServiceUnavailable || !strings.Contains(string(body), `"loading"`) {
			return fmt.Errorf("/health while loading: %d %s", status, body)
		}
	}
	if s.Addr == "" {
		return fmt.Errorf("llmserve logged no listen address in %v", startTimeout)
	}
	return fmt.Errorf("/health not 200 after %v", startTimeout)
}

// Get sends GET path with the server's key, on a new connection that is
// closed after, and returns the status and body.
func (s *Server) Get(path string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, s.URL+path, nil)
	if err != nil {
		return 0, nil, err
	}
	if s.Key != "" {
		req.Header.Set("Authorization", "Bearer "+s.Key)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// Log returns the process's output so far.
func (s *Server) Log() string { return s.log.String() }

// WaitLog waits up to timeout for the log to hold text.
func (s *Server) WaitLog(text string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if strings.Contains(s.log.String(), text) {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// Signal sends sig to the process.
func (s *Server) Signal(sig os.Signal) error { return s.cmd.Process.Signal(sig) }

// Wait waits up to timeout for the process to exit and returns whether it
// did and, when it did, how (nil: status 0).
func (s *Server) Wait(timeout time.Duration) (exited bool, err error) {
	select {
	case <-s.done:
		return true, s.err
	case <-time.After(timeout):
		return false, nil
	}
}
