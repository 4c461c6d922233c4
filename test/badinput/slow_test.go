package badinput

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"llmserve/internal/servertest"
)

// slowCase is a request whose bytes arrive slowly or never all.
type slowCase struct {
	name  string
	keyed bool
	want  want
	run   func(addr string) (reply, error)
}

// trickle writes head at once, then one byte of filler every period
// until the server answers; the answer must come, then the close.
func trickle(head string, period time.Duration) func(string) (reply, error) {
	return func(addr string) (reply, error) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return reply{}, err
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(conn, head); err != nil {
			return reply{}, err
		}
		stop := servertest.Trickle(conn, []byte(" "), period)
		defer stop()
		r, err := readReply(conn)
		if err != nil || r.status == 0 {
			return r, err
		}
		// After the answer the server must hang up, not wait for the rest.
		_, err = io.Copy(io.Discard, conn)
		if err != nil && !isClose(err) {
			return r, fmt.Errorf("connection not closed after the answer: %w", err)
		}
		r.closed = true
		return r, nil
	}
}

// halfSent writes head and part of a body, then half-closes (shut=true:
// the server reads EOF) or stalls, and reads the answer within wait.
func halfSent(req string, shut bool, wait time.Duration) func(string) (reply, error) {
	return func(addr string) (reply, error) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return reply{}, err
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(wait))
		if _, err := io.WriteString(conn, req); err != nil {
			return reply{}, err
		}
		if shut {
			conn.(*net.TCPConn).CloseWrite()
		}
		return readReply(conn)
	}
}

// abandoned sends half a request and hangs up at once; nothing comes back.
func abandoned(req string) func(string) (reply, error) {
	return func(addr string) (reply, error) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return reply{}, err
		}
		io.WriteString(conn, req)
		conn.Close()
		return reply{closed: true}, nil
	}
}

// crowd runs n trickled bodies to a route that never reads them at once:
// every one must be answered and closed.
func crowd(n int, head string) func(string) (reply, error) {
	return func(addr string) (reply, error) {
		var (
			wg    sync.WaitGroup
			first reply
			once  sync.Once
		)
		errs := make(chan error, n)
		for range n {
			wg.Go(func() {
				r, err := trickle(head, 100*time.Millisecond)(addr)
				if err == nil && (r.status != 404 || !r.closed) {
					err = fmt.Errorf("status %d, closed %v", r.status, r.closed)
				}
				if err != nil {
					errs <- err
					return
				}
				once.Do(func() { first = r })
			})
		}
		wg.Wait()
		close(errs)
		var msgs []string
		for err := range errs {
			msgs = append(msgs, err.Error())
		}
		if len(msgs) > 0 {
			return reply{}, fmt.Errorf("%d of %d: %s", len(msgs), n, strings.Join(msgs[:min(3, len(msgs))], "; "))
		}
		return first, nil // all alike: judged as one
	}
}

// slowCases are the slow and half-sent requests. The stalled body on a
// route that reads it waits out the server's 30 s body timeout.
func slowCases() []slowCase {
	cl := func(method, path, auth string) string {
		return method + " " + path + " HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
	}
	chunked := "POST /v1/nothing HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n100000\r\n{"
	part := `{"prompt":"Once upon`
	return []slowCase{
		{name: "trickled body to a missing route", want: closed, run: trickle(cl("POST", "/v1/nothing", ""), 50*time.Millisecond)},
		{name: "trickled body with a wrong method", want: closed, run: trickle(cl("PUT", "/v1/completions", ""), 50*time.Millisecond)},
		{name: "trickled body with a wrong key", keyed: true, want: closed, run: trickle(cl("POST", "/v1/completions", "Authorization: Bearer wrong\r\n"), 50*time.Millisecond)},
		{name: "trickled body without a key", keyed: true, want: closed, run: trickle(cl("POST", "/tokenize", ""), 50*time.Millisecond)},
		{name: "trickled chunked body to a missing route", want: closed, run: trickle(chunked, 50*time.Millisecond)},
		{name: "trickled body to /metrics", want: handled, run: trickle(cl("GET", "/metrics", ""), 50*time.Millisecond)},
		{name: "300 trickled bodies at once", want: closed, run: crowd(300, cl("POST", "/v1/nothing", ""))},
		{name: "half a body, then EOF", want: clientError, run: halfSent(fmt.Sprintf("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n%s", part), true, 10*time.Second)},
		{name: "half a chunk, then EOF", want: clientError, run: halfSent("POST /tokenize HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n{\"content\":", true, 10*time.Second)},
		{name: "half the headers, then EOF", want: closed, run: halfSent("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Le", true, 10*time.Second)},
		{name: "half a body, then hang up", want: closed, run: abandoned(fmt.Sprintf("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n%s", part))},
		{name: "stalled headers", want: closed, run: halfSent("GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Slow: ", false, 20*time.Second)},
		{name: "stalled body on a route that reads it", want: clientError, run: halfSent(fmt.Sprintf("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n%s", part), false, 40*time.Second)},
	}
}
