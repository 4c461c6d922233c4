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
	if o.apiKeyFile != "" {
		if o.apiKey != "" {
			return errors.New("give --api-key or --api-key-file, not both")
		}
		key, err := readAPIKeyFile(o.apiKeyFile)
		if err != nil {
			return err
		}
		o.apiKey = key
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

// readAPIKeyFile reads the one key of an --api-key-file (blank lines aside).
// Errors never quote the file's contents.
func readAPIKeyFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--api-key-file: %w", err)
	}
	var keys []string
	for line := range strings.SplitSeq(string(data), "\n") {
		if k := strings.TrimSpace(line); k != "" {
			keys = append(keys, k)
		}
	}
	switch len(keys) {
	case 0:
		return "", fmt.Errorf("--api-key-file %s: no key in the file", path)
	case 1:
		return keys[0], nil
	}
	return "", fmt.Errorf("--api-key-file %s: %d keys; llmserve takes one", path, len(keys))
}

// isJinja tells Jinja source from a built-in template's name.
func isJinja(s string) bool { return strings.Contains(s, "{%") || strings.Contains(s, "{{") }

// serveLogger is the server's logger as --log-disable, --log-file and
// --verbose ask, and what closes its file.
func serveLogger(o *serveOptions) (zerolog.Logger, func(), error) {
	if o.logDisable {
		return zerolog.New(io.Discard).Level(zerolog.Disabled), func() {}, nil
	}
	out, closeOut := os.Stderr, func() {}
	if o.logFile != "" {
		f, err := os.OpenFile(o.logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return zerolog.Logger{}, nil, fmt.Errorf("--log-file: %w", err)
		}
		out, closeOut = f, func() { f.Close() }
	}
	log := httpapi.NewLogger(out)
	if o.verbose {
		return log.Level(zerolog.DebugLevel), closeOut, nil
	}
	return log.Level(zerolog.InfoLevel), closeOut, nil
}
