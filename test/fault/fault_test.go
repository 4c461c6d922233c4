package fault

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"llmserve/internal/servertest"
)

// TestManyStreams runs 256 streaming clients × 4 rounds through the
// binary's own bench-serve: every request must succeed.
func TestManyStreams(t *testing.T) {
	s := startServer(t, "-np", "16", "--queue", "512")
	out, err := exec.Command(servertest.Build(t), "bench-serve", "--url", s.URL, "-c", "256", "-r", "4",
		"--prompt-tokens", "16", "--max-tokens", "12", "--ignore-eos", "--duration", "50s", "--json").Output()
	if err != nil {
		t.Fatalf("bench-serve: %v\n%s", err, out)
	}
	type pct struct {
		P50 float64 `json:"p50_ms"`
		P90 float64 `json:"p90_ms"`
		P99 float64 `json:"p99_ms"`
	}
	var rep struct {
		Sent      int            `json:"requests_sent"`
		OK        int            `json:"requests_ok"`
		Errors    map[string]int `json:"errors"`
		Generated int            `json:"generated_tokens"`
		Seconds   float64        `json:"duration_s"`
		TokPerSec float64        `json:"output_tokens_per_s"`
		TTFT      pct            `json:"ttft"`
		ITL       pct            `json:"inter_token"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("bench-serve --json: %v\n%s", err, out)
	}
	t.Logf("256 clients × 4 rounds: %d sent, %d ok, errors %v; %d tokens in %.2f s (%.0f tok/s); TTFT p50/p90/p99 %.1f/%.1f/%.1f ms; inter-token p50/p90/p99 %.2f/%.2f/%.2f ms",
		rep.Sent, rep.OK, rep.Errors, rep.Generated, rep.Seconds, rep.TokPerSec,
		rep.TTFT.P50, rep.TTFT.P90, rep.TTFT.P99, rep.ITL.P50, rep.ITL.P90, rep.ITL.P99)
	if rep.Sent != 1024 || rep.OK != 1024 || len(rep.Errors) != 0 {
		t.Errorf("%d of 1024 requests sent, %d ok, errors %v", rep.Sent, rep.OK, rep.Errors)
	}
	if rep.Generated != 1024*12 {
		t.Errorf("%d tokens generated, want %d", rep.Generated, 1024*12)
	}
}

// TestVanishingClients drops 100 clients after their second chunk: the
// server must free every slot.
func TestVanishingClients(t *testing.T) {
	s := startServer(t, "-np", "32", "--queue", "128", "-c", "2048")
	const clients = 100
	var wg sync.WaitGroup
	results := make([]streamResult, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			results[i] = stream(ctx, s.URL, map[string]any{"prompt": "Once upon a time", "max_tokens": 2000, "ignore_eos": true},
				func(n int) bool { return n < 2 })
			// Returning from stream closes the body mid-stream; cancel
			// closes the connection.
		}()
	}
	wg.Wait()
	gone := time.Now()
	for i, r := range results {
		if r.status != http.StatusOK || r.chunks != 2 || r.done {
			t.Fatalf("client %d: status %d, %d chunks, done %v, %v (%s)", i, r.status, r.chunks, r.done, r.err, r.body)
		}
	}
	var busy float64
	var err error
	for time.Since(gone) < 10*time.Second {
		if busy, err = s.Metric("llmserve_slots_busy"); err == nil && busy == 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	freed := time.Since(gone)
	queued, _ := s.Metric("llmserve_queue_depth")
	cancelled, _ := s.Metric(`llmserve_requests_finished_total{outcome="cancelled"}`)
	t.Logf("%d clients vanished after 2 chunks each: busy slots %v and queue %v %v after the last left; %v requests ended as cancelled",
		clients, busy, queued, freed.Round(time.Millisecond), cancelled)
	if err != nil || busy != 0 || queued != 0 {
		t.Errorf("slots busy %v, queue %v (%v) 10 s after every client left", busy, queued, err)
	}
	if cancelled != clients {
		t.Errorf("%v requests ended as cancelled, want %d", cancelled, clients)
	}
	// The same server still serves a full request.
	r := stream(context.Background(), s.URL, map[string]any{"prompt": "Once", "max_tokens": 8, "ignore_eos": true}, nil)
	if r.err != nil || !r.done || r.chunks != 8 {
		t.Errorf("request after the disconnects: %d chunks, done %v, %v", r.chunks, r.done, r.err)
	}
}

// TestSIGTERMUnderLoad sends SIGTERM while streams run: the streams end
// with [DONE], new requests are refused, and the process exits 0 within
// the shutdown timeout.
func TestSIGTERMUnderLoad(t *testing.T) {
	tests := []struct {
		name     string
		shutdown time.Duration
		tokens   int
	}{
		{"streams finish", 20 * time.Second, 300},
		{"timeout cuts streams", 300 * time.Millisecond, 2000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t, "-np", "8", "-c", "2048", "--shutdown-timeout", tt.shutdown.String())
			const clients = 8
			results := make([]streamResult, clients)
			var started, wg sync.WaitGroup
			started.Add(clients)
			for i := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					first := true
					results[i] = stream(context.Background(), s.URL, map[string]any{"prompt": "Once upon a time", "max_tokens": tt.tokens, "ignore_eos": true},
						func(int) bool {
							if first {
								first = false
								started.Done()
							}
							return true
						})
					if first {
						started.Done()
					}
				}()
			}
			started.Wait()
			sent := time.Now()
			if err := s.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if !s.WaitLog("shutting down", 5*time.Second) {
				t.Fatalf("no shutdown line after SIGTERM")
			}
			// A new request is refused: the port is closed or the server answers 503.
			late := stream(context.Background(), s.URL, map[string]any{"prompt": "Once", "max_tokens": 4}, nil)
			if late.status == http.StatusOK {
				t.Errorf("a request after SIGTERM was served")
			}
			lateHow := late.status
			wg.Wait()
			exited, err := s.Wait(tt.shutdown + 10*time.Second)
			if !exited {
				t.Fatalf("still running %v after SIGTERM", tt.shutdown+10*time.Second)
			}
			exit := time.Since(sent)
			if err != nil {
				t.Errorf("exit: %v, want status 0", err)
			}
			// The serve command waits 5 s at most for handlers after the timeout.
			if limit := tt.shutdown + 6*time.Second; exit > limit {
				t.Errorf("exited %v after SIGTERM, over the shutdown timeout %v (+ 5 s grace)", exit, tt.shutdown)
			}
			cut, chunks := 0, []int{}
			for i, r := range results {
				if r.err != nil || !r.done || r.status != http.StatusOK {
					t.Errorf("stream %d: status %d, done %v, %v", i, r.status, r.done, r.err)
				}
				if r.errEvent {
					cut++
				}
				chunks = append(chunks, r.chunks)
			}
			slices.Sort(chunks)
			t.Logf("SIGTERM with %d streams running, shutdown timeout %v: exit after %v; %d streams ended by an error event, chunks %v; a late request got status %d (0: refused connection)",
				clients, tt.shutdown, exit.Round(time.Millisecond), cut, chunks, lateHow)
		})
	}
}

// TestQueueOverflow fills one slot and a queue of 2: the rest get 429 with
// an OpenAI-style JSON error.
func TestQueueOverflow(t *testing.T) {
	s := startServer(t, "-np", "1", "--queue", "2", "-c", "2048")
	const clients = 10
	results := make([]streamResult, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = stream(context.Background(), s.URL, map[string]any{"prompt": "Once", "max_tokens": 600, "ignore_eos": true}, nil)
		}()
	}
	wg.Wait()
	ok, full := 0, 0
	for i, r := range results {
		switch r.status {
		case http.StatusOK:
			if r.err != nil || !r.done {
				t.Errorf("client %d: %v", i, r.err)
			}
			ok++
		case http.StatusTooManyRequests:
			full++
			var e struct {
				Error struct {
					Type, Code, Message string
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(r.body), &e); err != nil || e.Error.Code != "queue_full" || e.Error.Message == "" {
				t.Errorf("client %d: 429 body %q (%v)", i, r.body, err)
			}
		default:
			t.Errorf("client %d: status %d, %v", i, r.status, r.err)
		}
	}
	rejected, _ := s.Metric(`llmserve_requests_rejected_total{reason="queue_full"}`)
	t.Logf("%d clients on 1 slot and a queue of 2: %d served, %d got 429 (metrics: %v rejected)", clients, ok, full, rejected)
	if full == 0 || ok < 1 || ok+full != clients {
		t.Errorf("%d served and %d refused of %d", ok, full, clients)
	}
}

// TestRequestDefaults checks -n and --temp: requests that leave out
// max_tokens or temperature get the server's.
func TestRequestDefaults(t *testing.T) {
	s := startServer(t, "-n", "16", "--temp", "0")
	tests := []struct {
		body map[string]any
		want int
	}{
		{map[string]any{"prompt": "Once", "ignore_eos": true}, 16},
		{map[string]any{"prompt": "Once", "ignore_eos": true, "max_tokens": 9}, 9},
	}
	for _, tt := range tests {
		r := stream(context.Background(), s.URL, tt.body, nil)
		if r.err != nil || r.chunks != tt.want {
			t.Errorf("%v: %d chunks (%v), want %d", tt.body, r.chunks, r.err, tt.want)
		}
	}
	greedy := stream(context.Background(), s.URL, map[string]any{"prompt": "Once", "ignore_eos": true, "temperature": 0}, nil)
	byDefault := stream(context.Background(), s.URL, map[string]any{"prompt": "Once", "ignore_eos": true}, nil)
	if greedy.err != nil || greedy.text == "" || byDefault.text != greedy.text {
		t.Errorf("--temp 0: %q without a temperature, %q with 0 (%v)", byDefault.text, greedy.text, greedy.err)
	}
}
