// Package webui drives the chat page of the llmserve binary in headless
// Chromium against ../shared/models/stories260K.gguf: the page loads under
// its Content-Security-Policy without console errors, a reply streams in
// over several frames, Stop ends a reply and frees its slot, a reload keeps
// the conversations, model text with HTML in it stays text, the page works
// at a phone's width, and with --api-key it asks for the key. It installs
// Debian's chromium when it is absent and the test runs as root, and skips
// with a message where no Chromium can be had or the shared data is absent.
package webui

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	dir, err := os.MkdirTemp("", "llmserve-webui")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "llmserve")
	build := exec.Command("go", "build", "-o", binary, "llmserve/cmd/llmserve")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "webui: building llmserve:", err)
		return 1
	}
	return m.Run()
}

// chromium returns the path of a Chromium or Chrome executable. When there
// is none and the test runs as root it installs Debian's chromium package;
// where that cannot be done it skips the test, saying why, or fails it when
// LLMSERVE_E2E_REQUIRED=1 (as CI sets it, having installed Chromium).
func chromium(t *testing.T) string {
	t.Helper()
	skip := t.Skipf
	if os.Getenv("LLMSERVE_E2E_REQUIRED") == "1" {
		skip = t.Fatalf
	}
	names := []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"}
	find := func() string {
		for _, n := range names {
			if p, err := exec.LookPath(n); err == nil {
				return p
			}
		}
		return ""
	}
	if p := find(); p != "" {
		return p
	}
	if os.Geteuid() != 0 {
		skip("no Chromium on this machine, and installing one needs root: apt-get install chromium")
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		skip("no Chromium on this machine and no apt-get to install it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var out bytes.Buffer
	for _, args := range [][]string{{"update", "-q"}, {"install", "-y", "-q", "--no-install-recommends", "chromium"}} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			skip("no Chromium on this machine, and apt-get %s failed (%v):\n%s", args[0], err, lastLines(out.String(), 10))
		}
	}
	if p := find(); p != "" {
		t.Logf("installed Chromium: %s", p)
		return p
	}
	skip("apt-get installed chromium, but no executable named %v is on PATH", names)
	return ""
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// server is one llmserve process under test.
type server struct {
	t    *testing.T
	cmd  *exec.Cmd
	url  string        // http://127.0.0.1:port
	key  string        // the API key it needs, or ""
	done chan struct{} // closed when the process has exited

	mu  sync.Mutex   // guards log
	log bytes.Buffer // the process's stderr so far
}

var listenAddr = regexp.MustCompile(`"addr":"(http://[^"]+)"`)

// startServer serves stories260K on a free port with the extra flags, and
// waits until /health answers 200.
func startServer(t *testing.T, key string, flags ...string) *server {
	t.Helper()
	model := shared.Path(t, "models/stories260K.gguf")
	args := append([]string{"serve", "--model", model, "--port", "0"}, flags...)
	if key != "" {
		args = append(args, "--api-key", key)
	}
	s := &server{t: t, cmd: exec.Command(binary, args...), key: key, done: make(chan struct{})}
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
			s.mu.Lock()
			s.log.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if m := listenAddr.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		s.cmd.Wait()
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
			s.mu.Lock()
			t.Logf("server log:\n%s", lastLines(s.log.String(), 40))
			s.mu.Unlock()
		}
	})
	select {
	case s.url = <-addr:
	case <-s.done:
		t.Fatalf("llmserve exited at start:\n%s", s.log.String())
	case <-time.After(30 * time.Second):
		t.Fatal("llmserve printed no address in 30 s")
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
			t.Fatalf("/health not 200 after 30 s (%v)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
