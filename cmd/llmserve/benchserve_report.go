package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// latencyStats summarizes durations in milliseconds.
type latencyStats struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean_ms"`
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	Max  float64 `json:"max_ms"`
}

// newLatencyStats sorts ds (in place) and takes its percentiles by the
// nearest-rank method.
func newLatencyStats(ds []time.Duration) latencyStats {
	if len(ds) == 0 {
		return latencyStats{}
	}
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	rank := func(p float64) float64 {
		i := int(p*float64(len(ds))+0.999999) - 1
		return ms(ds[min(max(i, 0), len(ds)-1)])
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return latencyStats{
		N: len(ds), Mean: ms(sum / time.Duration(len(ds))),
		P50: rank(0.50), P90: rank(0.90), P99: rank(0.99), Max: ms(ds[len(ds)-1]),
	}
}

// benchReport is the outcome of a bench-serve run.
type benchReport struct {
	URL               string            `json:"url"`
	Endpoint          string            `json:"endpoint"`
	Model             string            `json:"model"`
	Clients           int               `json:"clients"`
	RequestsPerClient int               `json:"requests_per_client"`
	PromptTokens      int               `json:"prompt_tokens_target"`
	PrefixTokens      int               `json:"prefix_tokens"`
	MaxTokens         int               `json:"max_tokens"`
	IgnoreEOS         bool              `json:"ignore_eos"`
	TokensPerWord     float64           `json:"tokens_per_word"`
	TokensMeasured    bool              `json:"tokens_per_word_from_tokenize"`
	Sent              int               `json:"requests_sent"`
	OK                int               `json:"requests_ok"`
	NotSent           int               `json:"requests_not_sent"`
	Errors            map[string]int    `json:"errors"`
	ErrorExamples     map[string]string `json:"error_examples,omitempty"`
	DurationCapped    bool              `json:"duration_capped"`
	Seconds           float64           `json:"duration_s"`
	MeanPromptTokens  float64           `json:"mean_prompt_tokens"`
	GeneratedTokens   int               `json:"generated_tokens"`
	OutputTokPerSec   float64           `json:"output_tokens_per_s"`
	RequestsPerSec    float64           `json:"requests_per_s"`
	TTFT              latencyStats      `json:"ttft"`
	ITL               latencyStats      `json:"inter_token"`
	Latency           latencyStats      `json:"latency"`
	SchemaFile        string            `json:"json_schema_file,omitempty"`
	Groups            []groupReport     `json:"groups,omitempty"` // with --json-schema: constrained clients, then the others
}

// summarize gathers the results of a run that took elapsed.
func summarize(o *benchServeOptions, ps *promptSet, results []requestResult, elapsed time.Duration, capped bool) *benchReport {
	rep := &benchReport{
		URL: o.url, Endpoint: benchPath(o.endpoint), Model: o.model, Clients: o.clients, RequestsPerClient: o.requests,
		PromptTokens: o.promptTokens, PrefixTokens: o.prefixTokens, MaxTokens: o.maxTokens, IgnoreEOS: o.ignoreEOS,
		TokensPerWord: ps.tokensPerWord, TokensMeasured: ps.measured,
		Errors: map[string]int{}, ErrorExamples: map[string]string{}, DurationCapped: capped, Seconds: elapsed.Seconds(),
	}
	var ttft, gaps, lat []time.Duration
	prompted, promptSum := 0, 0
	for _, r := range results {
		if r.notSent {
			rep.NotSent++
			continue
		}
		rep.Sent++
		if r.errKind != "" {
			rep.Errors[r.errKind]++
			if _, ok := rep.ErrorExamples[r.errKind]; !ok {
				rep.ErrorExamples[r.errKind] = r.errMsg
			}
			continue
		}
		rep.OK++
		rep.GeneratedTokens += r.genTokens
		if r.promptTokens > 0 {
			prompted++
			promptSum += r.promptTokens
		}
		if r.ttft > 0 {
			ttft = append(ttft, r.ttft)
		}
		gaps = append(gaps, r.gaps...)
		lat = append(lat, r.latency)
	}
	if prompted > 0 {
		rep.MeanPromptTokens = float64(promptSum) / float64(prompted)
	}
	if s := elapsed.Seconds(); s > 0 {
		rep.OutputTokPerSec = float64(rep.GeneratedTokens) / s
		rep.RequestsPerSec = float64(rep.OK) / s
	}
	rep.TTFT, rep.ITL, rep.Latency = newLatencyStats(ttft), newLatencyStats(gaps), newLatencyStats(lat)
	if rep.Groups = groupReports(o, results, elapsed); rep.Groups != nil {
		rep.SchemaFile = o.schemaPath
	}
	return rep
}

func (r *benchReport) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func (r *benchReport) writeText(w io.Writer) {
	fmt.Fprintf(w, "server            %s%s, model %q\n", r.URL, r.Endpoint, r.Model)
	fmt.Fprintf(w, "load              %d clients × %d requests, prompts of ~%d tokens (%d shared), max_tokens %d, ignore_eos %v\n",
		r.Clients, r.RequestsPerClient, r.PromptTokens, r.PrefixTokens, r.MaxTokens, r.IgnoreEOS)
	how := "measured with /tokenize"
	if !r.TokensMeasured {
		how = "estimated: the server has no /tokenize"
	}
	fmt.Fprintf(w, "prompt tokens     %.1f per request reported by the server (%.2f tokens per word, %s)\n", r.MeanPromptTokens, r.TokensPerWord, how)
	fmt.Fprintf(w, "requests          %d sent, %d ok, %d failed, %d not sent", r.Sent, r.OK, r.Sent-r.OK, r.NotSent)
	if r.DurationCapped {
		fmt.Fprint(w, " (--duration reached)")
	}
	fmt.Fprintln(w)
	for _, k := range slices.Sorted(maps.Keys(r.Errors)) {
		fmt.Fprintf(w, "  error %-11s %d (e.g. %s)\n", k, r.Errors[k], strings.TrimSpace(r.ErrorExamples[k]))
	}
	fmt.Fprintf(w, "duration          %.2f s\n", r.Seconds)
	fmt.Fprintf(w, "generated         %d tokens, %.1f tokens/s, %.2f requests/s\n", r.GeneratedTokens, r.OutputTokPerSec, r.RequestsPerSec)
	row := func(name string, s latencyStats) {
		fmt.Fprintf(w, "%-17s p50 %8.2f  p90 %8.2f  p99 %8.2f  mean %8.2f  max %8.2f ms (n=%d)\n", name, s.P50, s.P90, s.P99, s.Mean, s.Max, s.N)
	}
	row("time to 1st token", r.TTFT)
	row("inter-token gap", r.ITL)
	row("request latency", r.Latency)
	writeGroups(w, r.Groups)
}
