package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// maxBenchSchemaBytes bounds the --json-schema file of bench-serve.
const maxBenchSchemaBytes = 1 << 20

// loadSchema reads --json-schema; it must hold one JSON object.
func (o *benchServeOptions) loadSchema() error {
	b, err := readBounded(o.schemaPath, maxBenchSchemaBytes)
	if err != nil {
		return fmt.Errorf("--json-schema: %w", err)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
		return fmt.Errorf("--json-schema %s: not a JSON object", o.schemaPath)
	}
	o.schema = b
	return nil
}

// constrainedClients is how many clients (the first ones) send the schema.
func (o *benchServeOptions) constrainedClients() int {
	if o.schema == nil {
		return 0
	}
	return constrainedRows(o.share, o.clients)
}

// groupReport is what the constrained or the unconstrained clients of a
// run measured.
type groupReport struct {
	Name            string       `json:"name"` // "constrained" or "unconstrained"
	Clients         int          `json:"clients"`
	OK              int          `json:"requests_ok"`
	Failed          int          `json:"requests_failed"`
	GeneratedTokens int          `json:"generated_tokens"`
	OutputTokPerSec float64      `json:"output_tokens_per_s"` // over the whole run
	PerStreamTokSec float64      `json:"per_stream_tokens_per_s"`
	ITL             latencyStats `json:"inter_token"`
	// Of the constrained answers: those that parse as JSON, and those that
	// do not although the server said they were complete (finish_reason
	// "stop"); the rest ended at max_tokens.
	ParsedJSON  int `json:"parsed_json,omitempty"`
	InvalidJSON int `json:"invalid_json,omitempty"`
	Truncated   int `json:"truncated,omitempty"`
}

// groupReports splits the results by whether they were constrained.
func groupReports(o *benchServeOptions, results []requestResult, elapsed time.Duration) []groupReport {
	k := o.constrainedClients()
	if k == 0 {
		return nil
	}
	gs := []groupReport{{Name: "constrained", Clients: k}, {Name: "unconstrained", Clients: o.clients - k}}
	gaps := make([][]time.Duration, 2)
	streamSecs := make([]float64, 2)
	for _, r := range results {
		if r.notSent {
			continue
		}
		i := 1
		if r.constrained {
			i = 0
		}
		g := &gs[i]
		if r.errKind != "" {
			g.Failed++
			continue
		}
		g.OK++
		g.GeneratedTokens += r.genTokens
		gaps[i] = append(gaps[i], r.gaps...)
		streamSecs[i] += (r.latency - r.ttft).Seconds()
		switch {
		case !r.constrained:
		case json.Valid(r.text):
			g.ParsedJSON++
		case r.finish == "stop":
			g.InvalidJSON++
		default:
			g.Truncated++
		}
	}
	for i := range gs {
		if s := elapsed.Seconds(); s > 0 {
			gs[i].OutputTokPerSec = float64(gs[i].GeneratedTokens) / s
		}
		if streamSecs[i] > 0 {
			// The first token of each request comes at its TTFT: the rate
			// is of the tokens after it.
			gs[i].PerStreamTokSec = float64(gs[i].GeneratedTokens-gs[i].OK) / streamSecs[i]
		}
		gs[i].ITL = newLatencyStats(gaps[i])
	}
	return gs
}

// writeGroups prints the group lines of the text report, and the ratio
// of the constrained clients' per-stream rate to the others'.
func writeGroups(w io.Writer, gs []groupReport) {
	for _, g := range gs {
		fmt.Fprintf(w, "%-17s %d clients, %d ok, %d failed: %d tokens, %.1f tokens/s (%.1f per stream), gap p50 %.2f p90 %.2f ms",
			g.Name, g.Clients, g.OK, g.Failed, g.GeneratedTokens, g.OutputTokPerSec, g.PerStreamTokSec, g.ITL.P50, g.ITL.P90)
		if g.Name == "constrained" {
			fmt.Fprintf(w, "; answers: %d parse as JSON, %d complete ones do not, %d cut at max_tokens", g.ParsedJSON, g.InvalidJSON, g.Truncated)
		}
		fmt.Fprintln(w)
	}
	if len(gs) == 2 && gs[1].PerStreamTokSec > 0 {
		fmt.Fprintf(w, "constrained/free  %.1f%% of the unconstrained per-stream rate\n", 100*gs[0].PerStreamTokSec/gs[1].PerStreamTokSec)
	}
}
