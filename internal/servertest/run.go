package servertest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// runTimeout bounds a command run by Run.
const runTimeout = 2 * time.Minute

// Run runs bin with args to its end, as Start does with LLMSERVE_API_KEY
// cleared, and returns its exit status and stderr. A command still running
// after runTimeout is killed (status -1).
func Run(tb testing.TB, bin string, args ...string) (int, string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "LLMSERVE_API_KEY=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stderr.String()
	}
	tb.Fatalf("servertest: running %s: %v", bin, err)
	return 0, ""
}
