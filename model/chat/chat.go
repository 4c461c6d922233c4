// Package chat renders chat prompts from a model's tokenizer.chat_template
// or from a built-in format, within bounds.
//
// The API, as a server uses it:
//
//	tmpl, err := chat.Resolve(flagOrFileContents) // a built-in name (chat.Names) or Jinja source
//	tmpl, err := chat.New(ggufTemplate)           // Jinja source; chat.Detect names a fallback when it fails
//	r, err := chat.NewRenderer(tmpl, chat.Limits{}) // once per model; r.Close() at shutdown
//	prompt, err := r.Render(ctx, msgs, chat.Options{AddGenerationPrompt: true, ...})
//
// main (and the TestMain of a package whose tests use a Renderer) must
// begin with
//
//	if code, ok := chat.RunWorker(); ok {
//		os.Exit(code)
//	}
//
// A chat template is code that comes with a model file. A Renderer runs a
// Jinja template in a pool of worker processes (this executable re-run
// with LLMSERVE_CHAT_WORKER=1, talking JSON over stdin and stdout), each
// with a small goroutine stack and a cap on its address space; the parent
// kills a worker when the render outlives Limits.Timeout or the request's
// context, and starts a fresh one on demand. So a template that recurses
// without end, allocates without end or loops too long fails that request
// only. In every render, in process too, range() is bounded
// (Limits.MaxRange items per render, counted before any list is built) and
// so is the prompt's size (Limits.MaxOutput). Template.Render renders in
// process, for trusted templates and tests.
//
// The built-in formats (Names: chatml, llama2, llama3, mistral-v7, gemma,
// phi3, deepseek3, zephyr, vicuna, ...) are Go code that writes exactly
// what llama.cpp's llm_chat_apply_template writes under the same name,
// leaving BOS to the tokenizer; they render in process.
//
// Every render error is a *RenderError; its Kind says who is at fault, for
// the HTTP status:
//
//	ErrRejected  the template's raise_exception: the conversation does not suit it (400)
//	ErrInput     messages or options the template cannot take, e.g. bad tool-call JSON (400)
//	ErrTemplate  the template failed on its own (500)
//	ErrLimit     a bound was passed; Bound names it: time, output, range, memory, recursion (500)
//	ErrWorker    a worker could not start or died otherwise (500)
//	ErrCanceled  the request's context ended; errors.Is(err, context.Canceled) holds
//
// RenderError.ClientFault tells the first two apart from the rest.
//
// Templates are Jinja, executed the way Hugging Face transformers'
// apply_chat_template executes them (trim_blocks and lstrip_blocks on, tojson
// without ASCII escaping), so a prompt rendered here is the exact string the
// model was trained on. Message text is passed to the template as data, never
// parsed as template source, so text that looks like Jinja stays literal.
//
// Variables a template sees:
//
//	messages               list of {role, content[, name, tool_call_id, tool_calls, reasoning_content]}
//	add_generation_prompt  Options.AddGenerationPrompt
//	bos_token, eos_token   Options.BOSToken, Options.EOSToken
//	tools                  Options.Tools (undefined when nil)
//	raise_exception(msg)   fails the render with msg (ErrRejected)
//	range(...)             Python's range, on integers, bounded by Limits.MaxRange
//	strftime_now(format)   the current time (Options.Now) in Python strftime format
//
// plus every entry of Options.Vars (enable_thinking and the like). A template
// is compiled once by New and may be rendered concurrently.
//
// The engine is github.com/ardanlabs/jinja, written for chat templates (its
// tojson writes Python's separators and key order). Its whitespace control
// differs from Jinja2's, so New resolves whitespace itself first (see
// whitespace.go). Differences from transformers that remain, all rare in
// chat templates: whole floats print without ".0" (1.0 as 1, also in
// tojson), none prints as "" rather than "None", tojson(indent=n) sorts keys
// and escapes <, > and &, and Python's "%" string formatting is missing.
package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string // "system", "user", "assistant" or "tool"
	Content string

	Name             string     // optional speaker or tool name
	ToolCallID       string     // role "tool": the id of the call this answers
	ToolCalls        []ToolCall // role "assistant": calls the model made
	ReasoningContent string     // role "assistant": thinking text kept apart from Content
}

// ToolCall is one function call made by the assistant.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // a JSON object, as the model wrote it
}

// Options are the template variables besides the messages.
type Options struct {
	AddGenerationPrompt bool   // end with the header of an assistant turn
	BOSToken, EOSToken  string // text of the vocabulary's BOS and EOS tokens

	// Tools is a JSON array of tool definitions (the OpenAI "tools" field).
	// Nil leaves `tools` undefined; key order is kept for tojson.
	Tools json.RawMessage

	// Vars are further template variables, e.g. "enable_thinking": false.
	// Values are nil, bool, int, int64, float64, string, []any,
	// map[string]any (keys sorted) or json.RawMessage (key order kept).
	// The variables above (tools only when set) take precedence over Vars
	// of the same name.
	Vars map[string]any

	// Now is the clock strftime_now reads; nil means time.Now. Through
	// a Renderer's worker it is read once per render.
	Now func() time.Time
}

// Template is a compiled chat template: Jinja source, or one of the
// built-in formats. It holds no mutable state.
type Template struct {
	src     string
	tmpl    *jinja.Template // nil for a built-in format
	builtin *builtin        // nil for Jinja source
}

// New compiles a chat template.
func New(src string) (*Template, error) {
	if strings.TrimSpace(src) == "" {
		return nil, errors.New("chat: empty template")
	}
	resolved, err := resolveWhitespace(src)
	if err != nil {
		return nil, fmt.Errorf("chat: compile template: %w", err)
	}
	t, err := jinja.Compile(resolved)
	if err != nil {
		// Report the error at the line and column the author sees when
		// the template as written shows it too.
		if _, errSrc := jinja.Compile(src); errSrc != nil {
			err = errSrc
		}
		return nil, fmt.Errorf("chat: compile template: %w", err)
	}
	return &Template{src: src, tmpl: t}, nil
}

// Source returns the template text New compiled, or the name of a
// built-in format.
func (t *Template) Source() string { return t.src }

// Builtin returns the name of the built-in format t is, or "" for a
// Jinja template.
func (t *Template) Builtin() string {
	if t.builtin == nil {
		return ""
	}
	return t.builtin.name
}

// Render formats msgs into a prompt in this process, with the default
// range and output limits (time, memory and recursion are not bounded
// here: use a Renderer for templates from model files). Errors are
// *RenderError.
func (t *Template) Render(msgs []Message, opts Options) (string, error) {
	out, rerr := t.render(msgs, opts, Limits{}.withDefaults())
	if rerr != nil {
		return "", rerr
	}
	return out, nil
}

// render runs the template in this goroutine within lim's range and
// output bounds.
func (t *Template) render(msgs []Message, opts Options, lim Limits) (out string, rerr *RenderError) {
	if t.builtin != nil {
		out = t.builtin.format(msgs, opts.AddGenerationPrompt)
	} else {
		st := &renderState{rangeLimit: lim.MaxRange, rangeLeft: lim.MaxRange}
		vars, rerr := templateVars(msgs, opts, st)
		if rerr != nil {
			return "", rerr
		}
		if out, rerr = t.exec(vars, st); rerr != nil {
			return "", rerr
		}
	}
	if len(out) > lim.MaxOutput {
		return "", limitf(BoundOutput, "the prompt has %d bytes, more than %d", len(out), lim.MaxOutput)
	}
	return out, nil
}

// exec runs the compiled Jinja template and classifies its failure.
func (t *Template) exec(vars map[string]jinja.Value, st *renderState) (out string, rerr *RenderError) {
	// The engine panics on some inputs ('a' * -1), which must fail this
	// request, not the server.
	defer func() {
		if r := recover(); r != nil {
			out, rerr = "", failf(ErrTemplate, "template engine failed: %v", r)
		}
	}()
	out, err := t.tmpl.RenderValues(vars)
	switch {
	case err == nil:
		return out, nil
	case st.rangeOver:
		return "", limitf(BoundRange, "range() calls of one render may produce %d items in all", st.rangeLimit)
	case st.raisedSet:
		return "", failf(ErrRejected, "%s", st.raised)
	}
	return "", &RenderError{Kind: ErrTemplate, Msg: err.Error(), Err: err}
}

// templateVars builds the variables a template sees (see the package
// comment).
func templateVars(msgs []Message, opts Options, st *renderState) (map[string]jinja.Value, *RenderError) {
	vars := make(map[string]jinja.Value, len(opts.Vars)+8)
	for k, v := range opts.Vars {
		val, err := goValue(v)
		if err != nil {
			return nil, failf(ErrInput, "variable %q: %v", k, err)
		}
		vars[k] = val
	}
	list := make([]jinja.Value, len(msgs))
	for i, m := range msgs {
		v, err := messageValue(m)
		if err != nil {
			return nil, failf(ErrInput, "message %d: %v", i, err)
		}
		list[i] = v
	}
	vars["messages"] = jinja.NewList(list)
	vars["add_generation_prompt"] = jinja.NewBool(opts.AddGenerationPrompt)
	vars["bos_token"] = jinja.NewString(opts.BOSToken)
	vars["eos_token"] = jinja.NewString(opts.EOSToken)
	if opts.Tools != nil {
		tools, err := jsonValue(opts.Tools)
		if err != nil {
			return nil, failf(ErrInput, "tools: %v", err)
		}
		vars["tools"] = tools
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	for k, v := range st.globals(now) {
		vars[k] = v
	}
	return vars, nil
}

// messageValue builds the dict a template sees for m. Optional fields are
// left out when empty so that `message.tool_calls is defined` and the like
// behave as they do with transformers.
func messageValue(m Message) (jinja.Value, error) {
	d := jinja.NewDict()
	dict := d.AsDict()
	dict.Set("role", jinja.NewString(m.Role))
	dict.Set("content", jinja.NewString(m.Content))
	if m.Name != "" {
		dict.Set("name", jinja.NewString(m.Name))
	}
	if m.ToolCallID != "" {
		dict.Set("tool_call_id", jinja.NewString(m.ToolCallID))
	}
	if m.ReasoningContent != "" {
		dict.Set("reasoning_content", jinja.NewString(m.ReasoningContent))
	}
	if len(m.ToolCalls) > 0 {
		calls := make([]jinja.Value, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			v, err := toolCallValue(c)
			if err != nil {
				return jinja.Undefined(), fmt.Errorf("tool call %d: %w", i, err)
			}
			calls[i] = v
		}
		dict.Set("tool_calls", jinja.NewList(calls))
	}
	return d, nil
}

// toolCallValue builds {id, type: "function", function: {name, arguments}}
// with the arguments decoded, as transformers expects them.
func toolCallValue(c ToolCall) (jinja.Value, error) {
	args := jinja.NewDict()
	if strings.TrimSpace(c.Arguments) != "" {
		var err error
		if args, err = jsonValue([]byte(c.Arguments)); err != nil {
			return jinja.Undefined(), fmt.Errorf("arguments of %q: %w", c.Name, err)
		}
	}
	fn := jinja.NewDict()
	fn.AsDict().Set("name", jinja.NewString(c.Name))
	fn.AsDict().Set("arguments", args)

	call := jinja.NewDict()
	if c.ID != "" {
		call.AsDict().Set("id", jinja.NewString(c.ID))
	}
	call.AsDict().Set("type", jinja.NewString("function"))
	call.AsDict().Set("function", fn)
	return call, nil
}

// goValue converts one Options.Vars entry.
func goValue(v any) (jinja.Value, error) {
	if raw, ok := v.(json.RawMessage); ok {
		return jsonValue(raw)
	}
	val := jinja.FromGoValue(v)
	if val.IsUndefined() {
		return val, fmt.Errorf("unsupported type %T", v)
	}
	return val, nil
}
