#!/usr/bin/env bash
# CPU benchmark: makes Llama-3.2-1B-shaped synthetic models (once, under models/) and
# measures prompt processing (pp512) and generation (tg128) with THREADS threads.
# usage: scripts/bench-cpu.sh [types...]   (default: Q4_K_M Q8_0 Q4_0)
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-2}
PP=${PP:-512}
TG=${TG:-128}
VOCAB=${VOCAB:-../shared/vocab/ggml-vocab-llama-bpe.gguf}
types=("$@")
[ ${#types[@]} -gt 0 ] || types=(Q4_K_M Q8_0 Q4_0)
go build -o bin/llmserve ./cmd/llmserve
mkdir -p models
vocab_flag=()
if [ -f "$VOCAB" ]; then vocab_flag=(--vocab "$VOCAB"); else echo "note: $VOCAB absent, using the built-in vocabulary (smaller output layer)"; fi
for t in "${types[@]}"; do
  m=models/llama-1b-$t.gguf
  [ -f "$m" ] || bin/llmserve synth --arch llama --shape 1b --type "$t" "${vocab_flag[@]}" --seed 1 -o "$m"
  bin/llmserve bench -m "$m" -p "$PP" -n "$TG" -t "$THREADS"
done
