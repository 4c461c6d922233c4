// Package e2e runs the llmserve binary on a real model and drives it over
// HTTP: with the official openai npm client (node), with raw server-sent
// event checks, with curl, and through a graceful shutdown. It skips when
// node, npm or the shared model is absent, and under -short.
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"llmserve/internal/servertest"
	"llmserve/internal/shared"
)

const modelName = "stories260K"

func TestMain(m *testing.M) { servertest.Main(m) }

func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs node: skipped under -short")
	}
	model := shared.Path(t, "models/stories260K.gguf")
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipUnlessRequired(t, "%s not found: skipping the end-to-end test", tool)
		}
	}
	installClient(t)
	bin := servertest.Build(t)
	for _, key := range []string{"", "e2e-secret"} {
		name := "auth off"
		if key != "" {
			name = "auth on"
		}
		t.Run(name, func(t *testing.T) {
			srv := startServer(t, bin, model, key)
			checkRawSSE(t, srv)
			checkCurl(t, srv)
			runClient(t, srv)
			checkGracefulShutdown(t, srv)
		})
	}
}

// skipUnlessRequired skips the test, or fails it when LLMSERVE_E2E_REQUIRED=1
// (as CI sets it) so that a missing tool cannot pass for a passing test.
func skipUnlessRequired(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("LLMSERVE_E2E_REQUIRED") == "1" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// installClient installs the pinned openai package unless it is there.
func installClient(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join("node_modules", "openai", "package.json")); err == nil {
		return
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	if out, err := cmd.CombinedOutput(); err != nil {
		skipUnlessRequired(t, "npm ci failed (no registry?): skipping the end-to-end test: %v\n%s", err, out)
	}
}

// server is a running llmserve.
type server struct{ *servertest.Server }

func startServer(t *testing.T, bin, model, key string) *server {
	t.Helper()
	args := []string{"--model", model, "-c", "256", "-np", "4", "--alias", modelName}
	if key != "" {
		args = append(args, "--api-key", key)
	}
	return &server{servertest.Start(t, bin, args...)}
}

func (s *server) post(ctx context.Context, path, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", s.URL+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if s.Key != "" {
		req.Header.Set("Authorization", "Bearer "+s.Key)
	}
	return http.DefaultClient.Do(req)
}

// checkRawSSE reads a streamed chat completion byte by byte.
func checkRawSSE(t *testing.T, s *server) {
	t.Helper()
	resp, err := s.post(context.Background(), "/v1/chat/completions",
		`{"model":"`+modelName+`","messages":[{"role":"user","content":"hi"}],"max_tokens":12,"temperature":0,"stream":true}`)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	events := strings.Split(string(body), "\n\n")
	if events[len(events)-1] != "" || events[len(events)-2] != "data: [DONE]" {
		t.Fatalf("stream does not end with 'data: [DONE]\\n\\n': %q", body)
	}
	finish := ""
	for _, ev := range events[:len(events)-2] {
		payload, ok := strings.CutPrefix(ev, "data: ")
		var chunk struct {
			Object  string `json:"object"`
			Choices []struct {
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if !ok || json.Unmarshal([]byte(payload), &chunk) != nil || chunk.Object != "chat.completion.chunk" {
			t.Fatalf("bad event %q", ev)
		}
		if len(chunk.Choices) == 1 && chunk.Choices[0].FinishReason != nil {
			finish = *chunk.Choices[0].FinishReason
		}
	}
	if finish != "length" && finish != "stop" {
		t.Errorf("no finish_reason in the stream: %q", body)
	}
}

// checkCurl streams a completion with curl -N, when curl is present.
func checkCurl(t *testing.T, s *server) {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("LLMSERVE_E2E_REQUIRED") == "1" {
			t.Fatal("curl not found")
		}
		t.Log("curl not found: skipping the curl check")
		return
	}
	args := []string{"-sN", "--fail-with-body", s.URL + "/v1/completions", "-H", "Content-Type: application/json",
		"-d", `{"prompt":"Once upon a time","max_tokens":8,"stream":true}`}
	if s.Key != "" {
		args = append(args, "-H", "Authorization: Bearer "+s.Key)
	}
	out, err := exec.Command("curl", args...).Output()
	if err != nil {
		t.Fatalf("curl: %v: %s", err, out)
	}
	if !strings.HasPrefix(string(out), "data: {") || !strings.HasSuffix(string(out), "\n\ndata: [DONE]\n\n") {
		t.Errorf("curl stream: %q", out)
	}
	if s.Key != "" {
		out, _ := exec.Command("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", s.URL+"/v1/models").Output()
		if string(out) != "401" {
			t.Errorf("curl without the key: status %s, want 401", out)
		}
	}
}

func runClient(t *testing.T, s *server) {
	t.Helper()
	cmd := exec.Command("node", "client.mjs")
	cmd.Env = append(os.Environ(), "LLMSERVE_URL="+s.URL, "LLMSERVE_MODEL="+modelName, "LLMSERVE_API_KEY="+s.Key)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("openai client checks failed: %v\n%s", err, out)
	}
}

// checkGracefulShutdown sends SIGTERM during a stream: the stream must
// still end with [DONE] and the server exit cleanly.
func checkGracefulShutdown(t *testing.T, s *server) {
	t.Helper()
	resp, err := s.post(context.Background(), "/v1/completions", `{"prompt":"Once","max_tokens":200,"stream":true,"ignore_eos":true}`)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if err := s.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(r)
	if !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Errorf("stream cut by shutdown: ends %q", rest[max(0, len(rest)-80):])
	}
	if exited, err := s.Wait(20 * time.Second); !exited {
		t.Errorf("server still running 20s after SIGTERM")
	} else if err != nil {
		t.Errorf("server exit: %v", err)
	}
}
