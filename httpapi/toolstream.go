package httpapi

import (
	"net/http"
	"strings"

	"llmserve/model/toolcall"
)

// toolStream is what one choice of a streamed answer with tools has
// generated and sent.
type toolStream struct {
	text strings.Builder // the whole output so far
	sent int             // bytes of text sent as content
}

// streamChatTools streams an answer that may call tools: content is sent
// as it comes, up to anything that could start a call; the rest waits for
// the choice's end, when its calls are sent as delta.tool_calls (for each
// call its index, id and name, then its arguments) and any text left as
// content. With logprobs, each token's come in a chunk of their own as
// the token is generated.
func streamChatTools(w http.ResponseWriter, g generation, resp chatResponse, ts *toolSet) {
	out := startSSE(w)
	st := statsOf(w)
	for i := range g.streams {
		resp.Choices = []chatChoice{{Index: i, Delta: &chatMessage{Role: "assistant", Content: strptr("")}}}
		out.send(resp)
	}
	out.flush()
	chunk := &deltaChunk{head: chunkHead(resp.ID, resp.Object, resp.Created, resp.Model)}
	choices := make([]toolStream, len(g.streams))
	var u usageJSON
	f := newFeed(g.ctx, g.streams)
	for batch := f.next(); batch != nil; batch = f.next() {
		record(st, batch)
		for _, ie := range batch {
			ev, c := ie.ev, &choices[ie.index]
			if ev.Done && ev.Err != nil {
				out.sendError(ev.Err)
				out.done()
				return
			}
			c.text.WriteString(ev.Text)
			if !ev.Done && g.sampling.Logprobs {
				// The token's logprobs go at once; its text may wait below.
				resp.Choices = []chatChoice{{Index: ie.index, Delta: &chatMessage{},
					Logprobs: chatLogprobsOf(g.model.Tokenizer, []tokenOut{{ev.Token, ev.Logprob, ev.Top}})}}
				out.send(resp)
			}
			if !ev.Done {
				text := c.text.String()
				if safe := toolcall.SafePrefix(ts.format, text); safe > c.sent {
					chunk.content, chunk.index, chunk.finish = text[c.sent:safe], ie.index, nil
					out.send(chunk)
					c.sent = safe
				}
				continue
			}
			g.addUsage(&u, ie.index, ev.Usage)
			text := c.text.String()
			content, calls, finish := ts.answer(text, ev.FinishReason)
			rest := text[c.sent:]
			if calls != nil {
				rest = ""
				if content != nil && len(*content) > c.sent {
					rest = (*content)[c.sent:]
				}
			}
			if rest != "" {
				chunk.content, chunk.index, chunk.finish = rest, ie.index, nil
				out.send(chunk)
			}
			for k, call := range calls {
				head := call
				head.Index, head.Function.Arguments = &k, ""
				resp.Choices = []chatChoice{{Index: ie.index, Delta: &chatMessage{ToolCalls: []toolCallJSON{head}}}}
				out.send(resp)
				resp.Choices = []chatChoice{{Index: ie.index, Delta: &chatMessage{ToolCalls: []toolCallJSON{
					{Index: &k, Function: toolFunctionJSON{Arguments: call.Function.Arguments}}}}}}
				out.send(resp)
			}
			chunk.content, chunk.index, chunk.finish = "", ie.index, strptr(finish)
			out.send(chunk)
		}
		out.flush()
	}
	out.finish(g, func() any {
		resp.Choices = []chatChoice{}
		resp.Usage = &u
		return resp
	})
}
