package badinput

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"llmserve/internal/servertest"
)

func TestMain(m *testing.M) { servertest.Main(m) }

// startServer runs the binary on model with a 256-token context and
// waits for /health to answer 200.
func startServer(t *testing.T, bin, model, key string) *servertest.Server {
	t.Helper()
	args := []string{"--model", model, "-c", "256", "-np", "2", "--alias", "stories", "--threads", "1"}
	if key != "" {
		args = append(args, "--api-key", key)
	}
	return servertest.Start(t, bin, args...)
}

// gauges reads the named gauges from /metrics.
func gauges(t *testing.T, s *servertest.Server, names ...string) map[string]float64 {
	t.Helper()
	g, err := s.Metrics(names...)
	if err != nil {
		t.Fatal(err)
	}
	return g
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
