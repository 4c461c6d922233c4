// Package servertest runs the real llmserve binary for the tests that drive
// it as a process: it builds llmserve/cmd/llmserve once per test binary,
// starts it on a free loopback port and waits until /health answers 200,
// collects its log for the failure report, and offers the small pieces
// such tests repeat: a GET with the server's key, samples of /metrics, a
// one-shot run for a command's exit status and stderr, a mutex-guarded log
// buffer and a byte trickler for slow-client cases. It is test support:
// import it from _test.go files only (TestOnlyTests checks).
package servertest
