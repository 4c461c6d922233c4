// Command llmserve serves GGUF language models over an OpenAI-style HTTP API
// and offers tools to inspect, synthesize and run models.
package main

import (
	"fmt"
	"llmserve/model/chat"
	"os"
)

// commands maps a subcommand name to its entry point. Each returns an error
// instead of exiting so that main alone decides the exit status.
func commands() map[string]func(args []string) error {
	return map[string]func(args []string) error{
		"serve":       serveCmd,
		"generate":    generateCmd,
		"tokenize":    tokenizeCmd,
		"inspect":     inspectCmd,
		"synth":       runSynth,
		"bench":       benchCmd,
		"bench-serve": benchServeCmd,
	}
}

func main() {
	// The same executable renders chat templates in bounded worker
	// processes (model/chat); a worker never reaches the commands.
	if code, ok := chat.RunWorker(); ok {
		os.Exit(code)
	}
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "llmserve:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) > 0 {
		if cmd, ok := commands()[args[0]]; ok {
			return cmd(args[1:])
		}
	}
	// Like llama.cpp's server, plain `llmserve --model x.gguf` serves.
	return serveCmd(args)
}
