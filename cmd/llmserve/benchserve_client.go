package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// requestResult is what one streamed request measured.
type requestResult struct {
	notSent      bool            // the run's duration ended first
	errKind      string          // "": success; else the kind of failure (see failKind)
	errMsg       string          // the failure, for the report's example
	ttft         time.Duration   // request sent to the first text; 0: no text came
	gaps         []time.Duration // between consecutive chunks with text
	latency      time.Duration   // request sent to the end of the stream
	promptTokens int             // from the final usage; 0: not reported
	genTokens    int             // from the final usage, else the chunks with text
	constrained  bool            // sent with the JSON schema
	finish       string          // the last finish_reason of the stream
	text         []byte          // the generated text (constrained requests only)
}

// Kinds of failure bench-serve counts.
const (
	errConnect = "connect"   // no response: refused, reset or DNS
	errTimeout = "timeout"   // --timeout or --duration ended the request
	errStream  = "stream"    // the stream broke off before [DONE]
	errEvent   = "sse_error" // the server sent an error event
	errDecode  = "bad_chunk" // a chunk that is not the JSON expected
)

// benchPath is the URL path of an endpoint.
func benchPath(endpoint string) string {
	if endpoint == "chat" {
		return "/v1/chat/completions"
	}
	return "/v1/completions"
}

// authorize adds the API key, when there is one.
func authorize(req *http.Request, key string) {
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
}

// firstModel asks GET /v1/models for the served model's id.
func firstModel(ctx context.Context, hc *http.Client, o *benchServeOptions) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.url+"/v1/models", nil)
	if err != nil {
		return "", err
	}
	authorize(req, o.apiKey)
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("GET /v1/models: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /v1/models: %s (pass --model)", resp.Status)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&list); err != nil || len(list.Data) == 0 {
		return "", fmt.Errorf("GET /v1/models: no model listed (%v); pass --model", err)
	}
	return list.Data[0].ID, nil
}

// requestBody is the JSON of one benchmark request.
// A constrained one carries the JSON schema as response_format and never
// ignore_eos, which the server refuses beside a constraint.
func requestBody(o *benchServeOptions, prompt string, constrained bool) ([]byte, error) {
	body := map[string]any{
		"model":          o.model,
		"stream":         true,
		"stream_options": map[string]bool{"include_usage": true},
		"max_tokens":     o.maxTokens,
	}
	if constrained {
		body["response_format"] = map[string]any{
			"type":        "json_schema",
			"json_schema": map[string]any{"name": "bench", "schema": json.RawMessage(o.schema)},
		}
	} else if o.ignoreEOS {
		body["ignore_eos"] = true
	}
	if o.temperature >= 0 {
		body["temperature"] = o.temperature
	}
	if o.endpoint == "chat" {
		body["messages"] = []map[string]string{{"role": "user", "content": prompt}}
	} else {
		body["prompt"] = prompt
	}
	return json.Marshal(body)
}

// streamChunk is the part of a completions or chat chunk bench-serve reads.
type streamChunk struct {
	Choices []struct {
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
		Delta        struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// hasText reports whether a chunk carries generated text.
func (c *streamChunk) hasText() bool {
	for _, ch := range c.Choices {
		if ch.Text != "" || ch.Delta.Content != "" || ch.Delta.ReasoningContent != "" {
			return true
		}
	}
	return false
}

// streamRequest sends one streamed request and times its chunks.
func streamRequest(ctx context.Context, hc *http.Client, o *benchServeOptions, prompt string, constrained bool) requestResult {
	res := requestResult{constrained: constrained}
	fail := func(kind string, err error) requestResult {
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
			kind = errTimeout
		}
		res.errKind, res.errMsg = kind, err.Error()
		return res
	}
	body, err := requestBody(o, prompt, constrained)
	if err != nil {
		return fail(errDecode, err)
	}
	rctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, o.url+benchPath(o.endpoint), bytes.NewReader(body))
	if err != nil {
		return fail(errConnect, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	authorize(req, o.apiKey)
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		if rctx.Err() != nil {
			return fail(errTimeout, err)
		}
		return fail(errConnect, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fail(fmt.Sprintf("http_%d", resp.StatusCode), fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(msg)))
	}
	rd := bufio.NewReaderSize(resp.Body, 64<<10)
	var last time.Time // the previous chunk with text
	chunks := 0        // chunks with text
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			if rctx.Err() != nil {
				return fail(errTimeout, rctx.Err())
			}
			if err == io.EOF {
				err = errors.New("the stream ended before [DONE]")
			}
			return fail(errStream, err)
		}
		data, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data:")
		if !ok {
			continue // blank separators, comments, event names
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			break
		}
		var c streamChunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return fail(errDecode, fmt.Errorf("chunk %.80q: %w", data, err))
		}
		if len(c.Error) > 0 && string(c.Error) != "null" {
			return fail(errEvent, fmt.Errorf("error event: %.200s", c.Error))
		}
		now := time.Now()
		if c.hasText() {
			if chunks == 0 {
				res.ttft = now.Sub(start)
			} else {
				res.gaps = append(res.gaps, now.Sub(last))
			}
			last = now
			chunks++
		}
		for _, ch := range c.Choices {
			if ch.FinishReason != nil && *ch.FinishReason != "" {
				res.finish = *ch.FinishReason
			}
			if constrained {
				res.text = append(res.text, ch.Text...)
				res.text = append(res.text, ch.Delta.Content...)
			}
		}
		if c.Usage != nil {
			res.promptTokens, res.genTokens = c.Usage.PromptTokens, c.Usage.CompletionTokens
		}
	}
	res.latency = time.Since(start)
	if res.genTokens == 0 {
		res.genTokens = chunks
	}
	return res
}
