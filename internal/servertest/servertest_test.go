package servertest

import (
	"strings"
	"testing"
)

func TestParseMetrics(t *testing.T) {
	const text = `# HELP go_goroutines Goroutines.
# TYPE go_goroutines gauge
go_goroutines 12
llmserve_slots_busy 0
llmserve_requests_rejected_total{reason="queue_full"} 7
llmserve_requests_rejected_total{reason="too_long"} 2
llmserve_bad 1e
`
	tests := []struct {
		names   []string
		want    map[string]float64
		wantErr string
	}{
		{[]string{"go_goroutines", "llmserve_slots_busy"}, map[string]float64{"go_goroutines": 12, "llmserve_slots_busy": 0}, ""},
		{[]string{`llmserve_requests_rejected_total{reason="queue_full"}`}, map[string]float64{`llmserve_requests_rejected_total{reason="queue_full"}`: 7}, ""},
		{[]string{"llmserve_slots"}, nil, "lacks llmserve_slots"},
		{[]string{"go_goroutines", "llmserve_queue_depth"}, nil, "lacks llmserve_queue_depth"},
		{[]string{"llmserve_bad"}, nil, `metric "llmserve_bad 1e"`},
	}
	for _, tt := range tests {
		got, err := ParseMetrics(text, tt.names...)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: error %v, want one with %q", tt.names, err, tt.wantErr)
			}
			continue
		}
		if err != nil || len(got) != len(tt.want) {
			t.Errorf("%v: %v, %v; want %v", tt.names, got, err, tt.want)
			continue
		}
		for n, v := range tt.want {
			if got[n] != v {
				t.Errorf("%s = %v, want %v", n, got[n], v)
			}
		}
	}
}

func TestFlagValue(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--model", "m", "--api-key", "k1"}, "k1"},
		{[]string{"--api-key=k2", "--model", "m"}, "k2"},
		{[]string{"--model", "m", "--api-key"}, ""},
		{[]string{"--model", "m"}, ""},
	}
	for _, tt := range tests {
		if got := flagValue(tt.args, "--api-key"); got != tt.want {
			t.Errorf("flagValue(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

func TestTail(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{{"abcdef", 3, "def"}, {"ab", 3, "ab"}, {"", 3, ""}} {
		if got := Tail(tt.s, tt.n); got != tt.want {
			t.Errorf("Tail(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}
