// Package toolcall reads the function calls a model writes in its chat
// template's tool-call syntax, and builds the grammar that makes it write
// one.
//
// A Format is chosen from the template's source by the markers it holds
// (Detect): "[TOOL_CALLS]" is Mistral's, "<tool_call>" is Hermes' (Qwen
// 2.5/3, Hermes 2 and 3), and a Llama 3 header template that mentions
// "<|python_tag|>" or the "ipython" role is Llama 3.1-3.3's. Parse splits a
// completed output into its text and its calls; text before a call stays
// text, and an output whose call syntax is malformed is text alone. The
// markers that are control tokens (<|python_tag|>, [TOOL_CALLS]) do not
// reach decoded text, so each parser takes its calls with or without them.
//
// Grammar writes the GBNF of the calls a format allows, with each
// function's parameters translated from their JSON schema, for
// tool_choice "required" or a named function.
package toolcall
