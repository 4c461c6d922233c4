package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"llmserve/model/chat"
)

// chatRequest is the body of POST /v1/chat/completions.
type chatRequest struct {
	genParams
	Messages []chatMessageIn `json:"messages"`
}

// chatMessageIn is one input message; content is a string or an array of
// text parts.
type chatMessageIn struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Name    string          `json:"name"`
}

type chatResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *usageJSON   `json:"usage,omitempty"`
}

type chatChoice struct {
	Index        int           `json:"index"`
	Message      *chatMessage  `json:"message,omitempty"`
	Delta        *chatMessage  `json:"delta,omitempty"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

type chatMessage struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type chatLogprobs struct {
	Content []chatTokenLogprob `json:"content"`
}

type chatTokenLogprob struct {
	Token       string             `json:"token"`
	Logprob     float32            `json:"logprob"`
	Bytes       []int              `json:"bytes"`
	TopLogprobs []chatTokenLogprob `json:"top_logprobs,omitempty"`
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	var body chatRequest
	m, err := s.parseGen(r, &body)
	if err != nil {
		writeError(w, err)
		return
	}
	base, err := body.request(true)
	if err != nil {
		writeError(w, err)
		return
	}
	prompt, err := chatPrompt(m, body.Messages)
	if err != nil {
		writeError(w, err)
		return
	}
	g, cancel, err := s.submit(w, r, m, base, [][]int32{prompt}, body.includeUsage())
	if err != nil {
		writeError(w, err)
		return
	}
	defer cancel()
	resp := chatResponse{
		ID:      "chatcmpl-" + requestID(w),
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   m.Name,
	}
	if body.Stream {
		resp.Object = "chat.completion.chunk"
		streamChat(w, g, resp)
	} else {
		writeChat(w, g, resp)
	}
}

// writeChat waits for the answer and sends one JSON response.
func writeChat(w http.ResponseWriter, g generation, resp chatResponse) {
	choices, err := collect(g.ctx, w, g.streams, g.sampling.Logprobs)
	if err != nil {
		writeError(w, err)
		return
	}
	c := choices[0]
	ch := chatChoice{Message: &chatMessage{Role: "assistant", Content: strptr(c.text.String())},
		FinishReason: strptr(c.final.FinishReason)}
	if g.sampling.Logprobs {
		ch.Logprobs = chatLogprobsOf(g.model.Tokenizer, c.tokens)
	}
	resp.Choices = []chatChoice{ch}
	var u usageJSON
	u.add(c.final.Usage)
	resp.Usage = &u
	writeJSON(w, http.StatusOK, resp)
}

// streamChat sends the answer as server-sent chunks: first the assistant
// role, then content deltas, then the finish reason. Each batch of events
// the scheduler queued leaves with one write.
func streamChat(w http.ResponseWriter, g generation, resp chatResponse) {
	out := startSSE(w)
	st := statsOf(w)
	resp.Choices = []chatChoice{{Delta: &chatMessage{Role: "assistant", Content: strptr("")}}}
	out.send(resp)
	out.flush()
	chunk := &deltaChunk{head: chunkHead(resp.ID, resp.Object, resp.Created, resp.Model)}
	var u usageJSON
	f := newFeed(g.ctx, g.streams)
	for batch := f.next(); batch != nil; batch = f.next() {
		record(st, batch)
		for _, ie := range batch {
			ev := ie.ev
			chunk.content, chunk.finish = ev.Text, nil
			switch {
			case ev.Done && ev.Err != nil:
				out.sendError(ev.Err)
				out.done()
				return
			case ev.Done:
				u.add(ev.Usage)
				chunk.finish = strptr(ev.FinishReason)
				out.send(chunk)
			case g.sampling.Logprobs:
				delta := &chatMessage{}
				if ev.Text != "" {
					delta.Content = strptr(ev.Text)
				}
				resp.Choices = []chatChoice{{Delta: delta,
					Logprobs: chatLogprobsOf(g.model.Tokenizer, []tokenOut{{ev.Token, ev.Logprob, ev.Top}})}}
				out.send(resp)
			case ev.Text != "":
				out.send(chunk)
			}
		}
		out.flush()
	}
	if err := g.ctx.Err(); err != nil {
		out.sendError(err)
	} else if g.includeUsage {
		resp.Choices = []chatChoice{}
		resp.Usage = &u
		out.send(resp)
	}
	out.done()
}

// chatPrompt renders the messages with the model's template and tokenizes
// them. BOS is added only when the template did not write it.
func chatPrompt(m *Model, in []chatMessageIn) ([]int32, error) {
	if len(in) == 0 {
		return nil, invalid("messages", "messages must hold at least one message")
	}
	msgs := make([]chat.Message, len(in))
	for i, msg := range in {
		switch msg.Role {
		case "system", "user", "assistant":
		case "developer":
			msg.Role = "system"
		default:
			return nil, invalid("messages", "messages[%d].role must be system, user or assistant, not %q", i, msg.Role)
		}
		text, err := messageText(msg.Content)
		if err != nil {
			return nil, invalid("messages", "messages[%d].content: %v", i, err)
		}
		msgs[i] = chat.Message{Role: msg.Role, Content: text, Name: msg.Name}
	}
	tok := m.Tokenizer
	bos := tok.TokenText(tok.BOS())
	text, err := m.Chat.Render(msgs, chat.Options{AddGenerationPrompt: true, BOSToken: bos, EOSToken: tok.TokenText(tok.EOS())})
	if err != nil {
		return nil, invalid("messages", "the chat template failed: %v", err)
	}
	ids, err := tok.Encode(text, bos == "" || !strings.HasPrefix(text, bos), true)
	if err != nil {
		return nil, invalid("messages", "cannot tokenize the rendered chat: %v", err)
	}
	return ids, nil
}

// messageText reads a message content: a string, null, or an array of
// {"type":"text","text":...} parts.
func messageText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errNotText
	}
	var sb strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return "", errNotText
		}
		sb.WriteString(p.Text)
	}
	return sb.String(), nil
}

// chatLogprobsOf builds the chat logprobs object of some tokens.
func chatLogprobsOf(tok Tokenizer, tokens []tokenOut) *chatLogprobs {
	lp := &chatLogprobs{Content: make([]chatTokenLogprob, len(tokens))}
	entry := func(id int32, logprob float32) chatTokenLogprob {
		b := tok.TokenBytes(id)
		ints := make([]int, len(b))
		for i, c := range b {
			ints[i] = int(c)
		}
		return chatTokenLogprob{Token: string(b), Logprob: finite(logprob), Bytes: ints}
	}
	for i, t := range tokens {
		e := entry(t.id, t.logprob)
		for _, alt := range t.top {
			e.TopLogprobs = append(e.TopLogprobs, entry(alt.ID, alt.Logprob))
		}
		lp.Content[i] = e
	}
	return lp
}
