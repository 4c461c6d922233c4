# shellcheck shell=bash
# Helpers of scripts/gpu-targets.sh, sourced by it: reading figures out of
# the logs of llmserve bench / bench-serve, llama-bench and
# llama-batched-bench, arithmetic on them, HTTP checks and the summary rows.
# Each reader prints one number, or nothing when the log lacks it (then the
# row shows "-"). Nothing here runs a measurement.

# num V: V, or "-" when empty.
num() { [ -n "${1:-}" ] && echo "$1" || echo -; }

# calc EXPR [VARS...]: awk arithmetic on named values, e.g.
# calc 'a * 2' a=217; prints nothing when a value is missing or "-".
calc() {
	local expr=$1 v args=()
	shift
	for v in "$@"; do
		case ${v#*=} in '' | -) return 0 ;; esac
		args+=(-v "$v")
	done
	awk "${args[@]}" "BEGIN { printf \"%.6g\\n\", $expr }" 2>/dev/null
}

# fmt V [DIGITS]: V rounded to DIGITS decimals (default 0), or "-".
fmt() { [ -n "${1:-}" ] && [ "$1" != - ] && awk -v v="$1" -v d="${2:-0}" 'BEGIN { printf "%.*f\n", d, v }' || echo -; }

# tokps LOG PATTERN: the tok/s of the llmserve bench line matching PATTERN
# (e.g. '^tg128 B=1 ', '^pp512:').
tokps() { [ -f "$1" ] && awk -v pat="$2" '$0 ~ pat { for (i = 1; i < NF; i++) if ($(i+1) == "tok/s") { print $i; exit } }' "$1"; }

# ctg_pct LOG B C: the share (percent) of the unconstrained tok/s that the
# bench line "ctgN B=B c=C" reports.
ctg_pct() {
	[ -f "$1" ] && awk -v b="$2" -v c="$3" '$1 ~ /^ctg/ && $2 == "B=" b && $3 == "c=" c {
		for (i = 1; i <= NF; i++) if ($i ~ /^\(/) { v = $i; sub(/^\(/, "", v); sub(/%$/, "", v); print v; exit } }' "$1"
}

# compile_ms LOG: "compiled for N tokens in T" of llmserve bench, in ms.
compile_ms() {
	[ -f "$1" ] && awk '/^constraint: / { for (i = 1; i < NF; i++) if ($i == "in") { t = $(i+1); sub(/;$/, "", t)
		if (t ~ /µs$/) { sub(/µs$/, "", t); print t / 1000 } else if (t ~ /ms$/) { sub(/ms$/, "", t); print t + 0 }
		else if (t ~ /ns$/) { sub(/ns$/, "", t); print t / 1e6 } else if (t ~ /s$/) { sub(/s$/, "", t); print t * 1000 }
		exit } }' "$1"
}

# gobench LOG NAME UNIT: the value before UNIT on the go test -bench line
# whose name starts with NAME (e.g. BenchmarkCompileSchema/compile ns/op).
gobench() {
	[ -f "$1" ] && awk -v n="$2" -v u="$3" 'index($1, n) == 1 { for (i = 2; i <= NF; i++) if ($i == u) { print $(i-1); exit } }' "$1"
}

# lb_ts LOG TEST: llama-bench's mean t/s of TEST (pp512, tg128) from its
# markdown table: "| model | ... | tg128 | 217.01 ± 0.35 |".
lb_ts() {
	[ -f "$1" ] && awk -F'|' -v t="$2" '{ for (i = 2; i < NF; i++) { f = $i; gsub(/ /, "", f)
		if (f == t) { split($(i+1), a, " "); print a[1]; exit } } }' "$1"
}

# bb_col LOG PP TG B COL: a column of llama-batched-bench's table row for
# PP prompt tokens, TG generated, B sequences; COL: S_PP or S_TG (t/s).
bb_col() {
	local col=7
	[ "$5" = S_TG ] && col=9
	[ -f "$1" ] && awk -F'|' -v pp="$2" -v tg="$3" -v b="$4" -v c="$col" '
		{ p = $2; t = $3; n = $4; gsub(/ /, "", p); gsub(/ /, "", t); gsub(/ /, "", n) }
		p == pp && t == tg && n == b { v = $c; gsub(/ /, "", v); print v; exit }' "$1"
}

# bs_stat LOG LABEL KEY: from bench-serve's text report, the value after
# KEY on the line starting with LABEL ("time to 1st token" p99, "inter-token
# gap" max, "generated" tokens/s -> KEY "tokens/s," reads the number before).
bs_stat() {
	[ -f "$1" ] && awk -v l="$2" -v k="$3" 'index($0, l) == 1 { for (i = 1; i < NF; i++) {
		if ($i == k) { print $(i+1); exit }
		if ($(i+1) == k ",") { print $i; exit } } }' "$1"
}
# bs_tokps LOG: aggregate generated tokens/s; bs_ok LOG: requests ok;
# bs_sent LOG: requests sent.
bs_tokps() { [ -f "$1" ] && awk '/^generated / { for (i = 1; i < NF; i++) if ($(i+1) == "tokens/s,") { print $i; exit } }' "$1"; }
bs_ok() { [ -f "$1" ] && awk '/^requests / { for (i = 1; i < NF; i++) if ($(i+1) == "ok,") { print $i; exit } }' "$1"; }
bs_sent() { [ -f "$1" ] && awk '/^requests / { print $2; exit }' "$1"; }

# metric TEXT NAME: the value of Prometheus sample NAME (no labels) in TEXT.
metric() { awk -v n="$2" '$1 == n { print $2 + 0; exit }' "$1" 2>/dev/null; }

# logfield LOG FIELD: FIELD's number from llmserve's JSON log lines.
logfield() { [ -f "$1" ] && grep -o "\"$2\":[0-9.e+]*" "$1" | tail -1 | cut -d: -f2; }

# http_get URL: the body (curl, else python3).
http_get() {
	if command -v curl >/dev/null; then curl -s -m 10 "$1"; else
		python3 -c 'import sys, urllib.request
try: sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())
except Exception: pass' "$1"
	fi
}
# http_code URL: the status code, 0 when nothing answers.
http_code() {
	if command -v curl >/dev/null; then curl -s -o /dev/null -m 5 -w '%{http_code}' "$1" || true; else
		python3 -c 'import sys, urllib.request, urllib.error
try: print(urllib.request.urlopen(sys.argv[1], timeout=5).status)
except urllib.error.HTTPError as e: print(e.code)
except Exception: print(0)' "$1"
	fi
}

# gpu_mem_mib: memory in use on GPU 0 in MiB (empty without nvidia-smi).
gpu_mem_mib() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 2>/dev/null | head -1 | tr -d ' '; }

# row TARGET MEASURED LLAMA MUST: one summary line.
row() { printf '%-64s | %12s | %12s | %s\n' "$1" "$(num "$2")" "$(num "$3")" "$4"; }
