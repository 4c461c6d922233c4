#!/usr/bin/env bash
# Runs llmserve's CUDA benchmarks: every .gpu/*.test binary (built by
# scripts/gpu-test.sh) with -test.bench, full output under LOGDIR (default
# .gpu/logs), then a short table: benchmark, µs per call, GB/s of the bytes
# each benchmark counts, tokens per second where reported. Arguments: a -test.bench pattern (default .) and a
# -test.benchtime (default 200x).
set -uo pipefail
cd "$(dirname "$0")/.."
LOGDIR=${LOGDIR:-.gpu/logs}
PATTERN=${1:-.}
BENCHTIME=${2:-200x}
mkdir -p "$LOGDIR"
nvidia-smi -L >/dev/null 2>&1 || { echo "bench-gpu: no GPU here" >&2; exit 1; }
status=0
for bin in .gpu/*.test; do
	[ -x "$bin" ] || continue
	name=$(basename "$bin" .test)
	dir=$(echo "$name" | tr _ /)
	[ -d "$dir" ] || dir=.
	log="$LOGDIR/bench-$name.log"
	( cd "$dir" && "$OLDPWD/$bin" -test.run '^$' -test.bench "$PATTERN" -test.benchtime "$BENCHTIME" -test.benchmem=false ) > "$log" 2>&1 || status=1
done
printf '%-52s %12s %10s %10s\n' benchmark 'µs/op' 'GB/s' 'tok/s'
cat "$LOGDIR"/bench-*.log | awk '/^Benchmark/ {
	name=$1; sub(/-[0-9]+$/, "", name); us=""; gbs=""; tps="";
	for (i = 2; i < NF; i++) {
		if ($(i+1) == "ns/op") us = sprintf("%.2f", $i/1000)
		if ($(i+1) == "MB/s") gbs = sprintf("%.0f", $i/1000)
		if ($(i+1) == "tok/s") tps = sprintf("%.0f", $i)
	}
	printf "%-52s %12s %10s %10s\n", name, us, gbs, tps }'
grep -h -E '^(--- FAIL|FAIL|panic)' "$LOGDIR"/bench-*.log && status=1
exit $status
