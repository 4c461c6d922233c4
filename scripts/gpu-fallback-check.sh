#!/usr/bin/env bash
# Checks that a binary built with CUDA starts where no GPU can be used and
# falls back to the CPU engine with a warning (the driver's cuInit fails
# there). Needs the CUDA toolkit and libcuda, not a GPU; on a machine with a
# GPU it only checks that the binary generates. Uses the built-in byte
# vocabulary of a tiny synthesized model, so it needs nothing downloaded.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -tags cuda -o "$tmp/llmserve" ./cmd/llmserve
"$tmp/llmserve" synth --arch llama --shape tiny --type Q8_0 -o "$tmp/tiny.gguf" > /dev/null
"$tmp/llmserve" generate -m "$tmp/tiny.gguf" -p "Hello" -n 4 --temp 0 > "$tmp/out.txt" 2> "$tmp/err.txt" || {
	echo "gpu-fallback-check: the cuda-built binary failed:" >&2; cat "$tmp/err.txt" >&2; exit 1; }
if nvidia-smi -L > /dev/null 2>&1; then
	echo "gpu-fallback-check: a GPU is present; the cuda-built binary generated"
	exit 0
fi
grep -q "running on the CPU" "$tmp/err.txt" || {
	echo "gpu-fallback-check: no CPU fallback warning:" >&2; cat "$tmp/err.txt" >&2; exit 1; }
echo "gpu-fallback-check: without a GPU the cuda-built binary ran on the CPU ($(head -1 "$tmp/err.txt"))"
