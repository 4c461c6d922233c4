#!/usr/bin/env bash
# HTTP streaming throughput: runs BenchmarkThroughput (httpapi/bench_test.go), which decodes
# the same batch (8 and 32 greedy streams x 128 tokens) three ways on one engine (the
# engine's own loop, the scheduler, SSE over HTTP to TCP clients) on stories260K and on a
# synthetic Llama with a 128k vocabulary (written to $TMPDIR/tiny-bpe.gguf on first use),
# COUNT times, and prints the median of each figure. Needs ../shared (the benchmark skips
# without it). The raw output is kept in $LOG.
# usage: scripts/bench-http.sh [benchmark regexp]   (default: Throughput, all cases)
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${COUNT:-3}
BENCHTIME=${BENCHTIME:-3s}
LOG=${LOG:-$(mktemp -t bench-http.XXXXXX.txt)}
echo "load before: $(uptime)"
go test ./httpapi -run '^$' -bench "${1:-Throughput}" -count "$COUNT" -benchtime "$BENCHTIME" -timeout 60m | tee "$LOG"
echo
echo "load after: $(uptime)"
echo "medians of $COUNT runs (raw output: $LOG)"
awk '
function median(key,   n, i, j, v, t) {
  n = cnt[key]
  for (i = 1; i <= n; i++) v[i] = val[key, i]
  for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
  return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
/^BenchmarkThroughput\// {
  name = $1; sub(/^BenchmarkThroughput\//, "", name); sub(/-[0-9]+$/, "", name)
  if (!(name in seen)) { seen[name] = 1; order[++cases] = name }
  for (i = 5; i < NF; i += 2) { key = name SUBSEP $(i + 1); val[key, ++cnt[key]] = $i }
}
END {
  if (cases == 0) { print "no results (is ../shared present?)"; exit 1 }
  fmt = "%-32s %12s %12s %12s %9s %9s %7s %7s\n"
  printf fmt, "case", "engine tok/s", "sched tok/s", "http tok/s", "sched/eng", "http/eng", "+steps", "+steps"
  printf fmt, "", "", "", "", "", "", "sched", "http"
  for (c = 1; c <= cases; c++) {
    n = order[c]
    printf "%-32s %12.0f %12.0f %12.0f %9.3f %9.3f %7.2f %7.2f\n", n,
      median(n SUBSEP "engine-tok/s"), median(n SUBSEP "sched-tok/s"), median(n SUBSEP "http-tok/s"),
      median(n SUBSEP "sched/engine"), median(n SUBSEP "http/engine"),
      median(n SUBSEP "sched-extra-steps"), median(n SUBSEP "http-extra-steps")
  }
}' "$LOG"
