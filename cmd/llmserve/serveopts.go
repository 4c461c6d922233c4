package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rs/zerolog"

	"llmserve/httpapi"
)

// finish completes the options after parsing: the API key from the
// environment, refused llama-server flags, --ubatch-size and the chat
// template file.
func (o *serveOptions) finish() error {
	if len(o.refused) > 0 {
		return errors.New(strings.Join(o.refused, "; "))
	}
	if o.apiKey == "" {
		o.apiKey = os.Getenv("LLMSERVE_API_KEY")
	}
	if o.ubatch > 0 {
		o.batch = min(o.batch, o.ubatch)
	}
	if o.chatTemplateFile != "" {
		if o.chatTemplate != "" {
			return errors.New("give --chat-template or --chat-template-file, not both")
		}
		src, err := os.ReadFile(o.chatTemplateFile)
		if err != nil {
			return fmt.Errorf("--chat-template-file: %w", err)
		}
		if !isJinja(string(src)) {
			return fmt.Errorf("--chat-template-file %s: no Jinja tags ({%% or {{) in the file", o.chatTemplateFile)
		}
		o.chatTemplate = string(src)
	}
	return nil
}

// isJinja tells Jinja source from a built-in template's name.
func isJinja(s string) bool { return strings.Contains(s, "{%") || strings.Contains(s, "{{") }

// serveLogger is the server's logger as --log-disable and --verbose ask.
func serveLogger(o *serveOptions) zerolog.Logger {
	if o.logDisable {
		return zerolog.New(io.Discard).Level(zerolog.Disabled)
	}
	log := httpapi.NewLogger(os.Stderr)
	if o.verbose {
		return log.Level(zerolog.DebugLevel)
	}
	return log.Level(zerolog.InfoLevel)
}
