package e2e

import (
	"os"
	"os/exec"
	"testing"

	"llmserve/internal/servertest"
	"llmserve/internal/shared"
)

// TestToolsEndToEnd serves stories260K with Qwen 2.5's chat template (which
// has tools) and runs tools.mjs with the openai client: forced tool calls
// whole and streamed, their answers sent back, and a json_schema response.
func TestToolsEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs node: skipped under -short")
	}
	model := shared.Path(t, "models/stories260K.gguf")
	tmpl := shared.Path(t, "templates/Qwen-Qwen2.5-7B-Instruct.jinja")
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipUnlessRequired(t, "%s not found: skipping the end-to-end test", tool)
		}
	}
	installClient(t)
	bin := servertest.Build(t)
	srv := servertest.Start(t, bin, "--model", model, "-c", "2048", "-np", "2", "--alias", modelName, "--chat-template-file", tmpl)
	cmd := exec.Command("node", "tools.mjs")
	cmd.Env = append(os.Environ(), "LLMSERVE_URL="+srv.URL, "LLMSERVE_MODEL="+modelName)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Errorf("openai client tool checks failed: %v", err)
	}
}
