#!/usr/bin/env bash
# End-to-end check of llmserve's HTTP API on a real model: builds the
# binary, serves MODEL (default ../shared/models/stories260K.gguf), checks
# /health, streams with curl and runs the official openai npm client
# (test/e2e/client.mjs), with and without an API key.
# Usage: scripts/e2e.sh [MODEL]. Skips (exit 0) when node, npm or the model is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:-../shared/models/stories260K.gguf}
PORT=${PORT:-18089}
URL="http://127.0.0.1:$PORT"
NAME=e2e-model

for tool in node npm curl; do
  command -v "$tool" >/dev/null || { echo "e2e: $tool not found: skipping"; exit 0; }
done
[ -f "$MODEL" ] || { echo "e2e: model $MODEL not found: skipping"; exit 0; }

go build -o bin/llmserve ./cmd/llmserve
(cd test/e2e && { [ -f node_modules/openai/package.json ] || npm ci --no-audit --no-fund; })

pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; }
trap cleanup EXIT

run() { # run KEY: serve, check, stop
  local key=$1 auth=()
  [ -n "$key" ] && auth=(-H "Authorization: Bearer $key")
  LLMSERVE_API_KEY=$key bin/llmserve --model "$MODEL" --port "$PORT" -c 256 --alias "$NAME" 2>/tmp/llmserve-e2e.log &
  pid=$!
  for _ in $(seq 1 300); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "$URL/health" || true)
    [ "$code" = 200 ] && break
    sleep 0.1
  done
  [ "$code" = 200 ] || { echo "e2e: server not healthy"; cat /tmp/llmserve-e2e.log; exit 1; }

  out=$(curl -sN "${auth[@]}" "$URL/v1/chat/completions" -H 'Content-Type: application/json' \
    -d '{"messages":[{"role":"user","content":"hi"}],"max_tokens":8,"stream":true}')
  case "$out" in
    "data: {"*$'\n\ndata: [DONE]') ;; # $(...) drops the final blank line
    *) echo "e2e: bad SSE stream: $out"; exit 1 ;;
  esac
  if [ -n "$key" ]; then
    code=$(curl -s -o /dev/null -w '%{http_code}' "$URL/v1/models")
    [ "$code" = 401 ] || { echo "e2e: no key gave $code, want 401"; exit 1; }
  fi
  (cd test/e2e && LLMSERVE_URL=$URL LLMSERVE_MODEL=$NAME LLMSERVE_API_KEY=$key node client.mjs)
  kill -TERM "$pid"
  wait "$pid"
  pid=
}

echo "== auth off"; run ""
echo "== auth on"; run "e2e-secret"
echo "e2e: all passed"
