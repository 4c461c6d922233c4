#!/usr/bin/env bash
# Measures the targets of the open issues (17 constrained decoding, 18 KV
# pool and serving, 19 architectures) ON THE GPU MACHINE, each beside
# llama.cpp built there on the same files (scripts/llama-build.sh), from a
# bundle of scripts/gpu-bundle.sh (carry .gpu and .gpu-llama; see
# docs/GPU.md, "Measuring the targets on the device").
#
#   bash scripts/gpu-targets.sh PHASE...
#
# Phases (each under 9 minutes; run them in the order below, two per call
# at most):
#   prep         unpack the bundle to /opt, start the llama.cpp build and the
#                synthesis of every model in the background, wait for both
#                (PREP_WAIT s, default 500); PREP_TESTS=1 runs gpu-test.sh
#                meanwhile (its timing does not matter)
#   arch         issue 19: batch-1 decode of Mixtral-8x7B-, Gemma-2-9B- and
#                Phi-3.5-mini-shaped Q4_K_M beside llama-bench; 1B/8B llama
#                tg B=1 against the last figures (no regression over 2%)
#   constrained  issue 17: bench --json-schema on 1B Q4_K_M at B=1 and B=16
#                (half constrained); the grammar compile and mask benchmarks
#   serve        issue 18: 8B Q4_K_M KV memory with 64 slots x 4096, an
#                8000-token prompt and decode at depth 8000, the second turn
#                of a 4000-token chat, 16 streams while a 4096-token prompt
#                arrives, HTTP 64 clients x 2 x 256 tokens on 8B and 1B;
#                each against llama-server when it is built
#   llama        llama.cpp's own figures (llama-bench, llama-batched-bench on
#                1B/8B Q4_K_M) beside those of ../shared/CUDA.md
# Every phase first waits for background work still running (a synthesis
# or build beside a measurement slows it) and synthesizes, in the
# foreground, the models it needs that are not in MODELS yet.
#
# Each phase prints one line per figure, `target | measured | llama.cpp |
# must reach`, into LOGDIR/targets-summary.txt (and /opt/targets/summary-all.txt
# across calls); full logs go to LOGDIR (default /tmp/gpu-targets-TIME/logs
# when $OUT is set, else .gpu/logs), packed into $OUT/logs.tgz after every
# summary line, so that a call stopped at its limit still brings them back.
#
# Environment: MODELS (default /opt/models, or /dev/shm/models when only
# memory has room for the ~42 GB of models), LLMSERVE (a cuda-built llmserve;
# default: unpacked from .gpu/llmserve.xz to /opt/llmserve-bundle), VOCAB,
# LLAMA_BIN (default /opt/llama.cpp/build/bin), PORT (default 8090),
# ARCH_PROMPT (the prompt before arch's tg128, default 0: llama-bench's
# tg128 starts from an empty cache too; pp512 is a run of its own), ARCH_MODELS
# (arch's new architectures, default "mixtral-8x7b gemma2-9b phi3-mini"),
# ARCH_BASE (arch's llama regression check, default "llama-1b llama-8b";
# empty for none), PREP_MODELS (the models prep synthesizes), CALL_BUDGET
# (seconds the whole call may take, default 560: steps that would pass it
# are skipped and said so), SKIP (serve steps left out: chat, streams,
# http64, full64), DRY=1 (print the commands, run nothing; works without a
# GPU), M_1B/M_8B/M_PHI3_MINI/M_GEMMA2_9B/M_MIXTRAL_8X7B (a model file
# instead of the synthesized one, e.g. for a smoke run on the CPU with
# NO_GPU=1).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD
# shellcheck source=scripts/targets-lib.sh
. scripts/targets-lib.sh
DRY=${DRY:-0}
NO_GPU=${NO_GPU:-0}
MODELS=${MODELS:-}
free_gb() { local v; v=$(df -B1G --output=avail "$1" 2>/dev/null | tail -1 | tr -d ' '); echo "${v:-0}"; }
# pick_models: the models take ~42 GB: /opt/models when its disk has room
# for them all, else /dev/shm/models when memory does (the choice is kept
# for later calls in /opt/targets/models-dir); MODELS overrides.
pick_models() {
	[ -n "$MODELS" ] && return 0
	if [ -s /opt/targets/models-dir ]; then MODELS=$(cat /opt/targets/models-dir); return 0; fi
	MODELS=/opt/models
	[ "$DRY" != 0 ] && return 0
	mkdir -p /opt/targets /opt/models 2>/dev/null
	if [ "$(free_gb /opt/models)" -lt 46 ] && [ "$(free_gb /dev/shm)" -ge 50 ]; then MODELS=/dev/shm/models; fi
	echo "$MODELS" > /opt/targets/models-dir 2>/dev/null
}
# The background synthesis of prep (synth1) outlives its call: it must not
# write another call's $OUT.
[ "${1:-}" = synth1 ] && { OUT=; LOGDIR=$MODELS/logs; CALL_BUDGET=3600; }
OUTDIR=${OUT:-}
# At most 8 files come back from $OUT: the logs are written outside it and
# come back packed as $OUT/logs.tgz, beside $OUT/targets-summary.txt.
if [ -z "${LOGDIR:-}" ]; then
	if [ -n "$OUTDIR" ]; then LOGDIR=/tmp/gpu-targets-$(date +%s)/logs; else LOGDIR=.gpu/logs; fi
fi
BUNDLE=${BUNDLE:-/opt/llmserve-bundle}
LLAMA_DIR=${LLAMA_DIR:-/opt/llama.cpp}
LLAMA_BIN=${LLAMA_BIN:-$LLAMA_DIR/build/bin}
PORT=${PORT:-8090}
CALL_BUDGET=${CALL_BUDGET:-560}
PREP_WAIT=${PREP_WAIT:-500}
ARCH_PROMPT=${ARCH_PROMPT:-0} # prompt of arch's llmserve bench before its tg128
SCHEMA_FILE=${SCHEMA_FILE:-$root/scripts/bench-schema.json}
ALL=${SUMMARY_ALL:-/opt/targets/summary-all.txt}
t_call=$(date +%s)
mkdir -p "$LOGDIR" || exit 1
LOGDIR=$(cd "$LOGDIR" && pwd)
summary="$LOGDIR/targets-summary.txt"
touch "$summary"

# Last figures of llmserve on the device (docs/PERFORMANCE.md, main's default
# after the merge of 2026-12-01): tg B=1 of the llama models, for issue 19's
# "no regression over 2%".
declare -A BASE_TG=([llama-1b]=1429 [llama-8b]=453)
# ../shared/CUDA.md: llama.cpp c392e50 on the same H200 and synth files.
declare -A CUDAMD=([llama-1b/pp512]=35371 [llama-1b/tg128]=586 [llama-8b/pp512]=9100 [llama-8b/tg128]=217
	[llama-1b/bb1]=336 [llama-1b/bb16]=2701 [llama-1b/bb64]=4847 [llama-8b/bb1]=159 [llama-8b/bb16]=1125 [llama-8b/bb64]=2316
	[llama-8b/pp8000]=8088 [llama-8b/tg@8000]=140 [llama-8b/pp2000]=8845 [llama-8b/tg@2000]=195
	[http-8b/tokps]=848 [http-8b/ttft99]=1071 [http-8b/itl99]=156 [http-1b/tokps]=1089)
# Approximate file sizes (GB) of the Q4_K_M synth models, to check the disk.
declare -A SIZE_GB=([mixtral-8x7b]=28 [gemma2-9b]=6 [phi3-mini]=3 [llama-8b]=5 [llama-1b]=1)

say() { echo "$*" | tee -a "$summary" >> "$ALL"; echo "$*"; pack; }
note() { echo "gpu-targets: $*" | tee -a "$LOGDIR/targets-notes.txt" >&2; }
elapsed() { echo $(( $(date +%s) - t_call )); }
# left: seconds the call has left.
left() { echo $(( CALL_BUDGET - $(elapsed) )); }
# budget NEED WHAT: true when NEED more seconds fit the call; else says so.
budget() {
	[ "$DRY" != 0 ] && return 0
	[ "$(left)" -ge "$1" ] && return 0
	say "skipped (call budget: $(left)s left, $1s needed): $2"
	return 1
}
# skip NAME: true when SKIP (space-separated step names) holds NAME.
skip() { case " ${SKIP:-} " in *" $1 "*) say "skipped (SKIP): $1"; return 0 ;; esac; return 1; }
# tmo MAX: a timeout of at most MAX seconds, within what the call has left.
tmo() { local l; l=$(( $(left) - 10 )); [ "$l" -lt 5 ] && l=5; [ "$1" -lt "$l" ] && echo "$1" || echo "$l"; }
# x LOG MAX CMD...: runs CMD with a timeout, output to LOG (DRY: prints it).
x() {
	local log=$1 max=$2
	shift 2
	if [ "$DRY" != 0 ]; then echo "+ $* > $log"; return 0; fi
	echo "+ $*" > "$log"
	timeout "$(tmo "$max")" "$@" >> "$log" 2>&1
	local rc=$?
	[ $rc -eq 0 ] || note "exit $rc: $* (log $log)"
	return $rc
}
pack() {
	[ -n "$OUTDIR" ] && [ -d "$OUTDIR" ] || return 0
	cp "$summary" "$OUTDIR/targets-summary.txt" 2>/dev/null
	[ -f "$ALL" ] && cp "$ALL" "$OUTDIR/targets-all.txt" 2>/dev/null
	tar czf "$OUTDIR/logs.tgz.part" -C "$(dirname "$LOGDIR")" "$(basename "$LOGDIR")" 2>/dev/null &&
		mv "$OUTDIR/logs.tgz.part" "$OUTDIR/logs.tgz"
}

# --- the bundle ------------------------------------------------------------
unxz_to() { # unxz_to SRC.xz DST
	{ xz -dc "$1" > "$2.part" 2>/dev/null || python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$1" "$2.part"; } &&
		chmod +x "$2.part" && mv "$2.part" "$2"
}
# unpack: llmserve, grammar.bench and the vocabulary from .gpu to BUNDLE
# (outside the copied tree, kept while the machine is warm), once per bundle.
unpack() {
	if [ -n "${LLMSERVE:-}" ]; then L=$LLMSERVE; else L=$BUNDLE/llmserve; fi
	GB=$BUNDLE/grammar.bench
	VOCAB=${VOCAB:-$BUNDLE/shared/vocab/ggml-vocab-llama-bpe.gguf}
	[ "$DRY" != 0 ] && { echo "+ unpack .gpu/{llmserve,grammar.bench}.xz and .gpu/shared.txz -> $BUNDLE"; return 0; }
	[ -n "${LLMSERVE:-}" ] && [ -f "$VOCAB" ] && return 0
	local stamp
	stamp=$(cat .gpu/llmserve.xz .gpu/grammar.bench.xz .gpu/shared.txz 2>/dev/null | sha256sum | cut -c1-16)
	if [ -x "$L" ] && [ -f "$VOCAB" ] && [ "$(cat "$BUNDLE/.stamp" 2>/dev/null)" = "$stamp" ]; then return 0; fi
	mkdir -p "$BUNDLE" || return 1
	if [ -z "${LLMSERVE:-}" ]; then
		if [ -f .gpu/llmserve.xz ]; then unxz_to .gpu/llmserve.xz "$L" || return 1
		elif [ -x .gpu/llmserve ]; then cp .gpu/llmserve "$L" || return 1
		else note "no .gpu/llmserve(.xz): make gpu-bundle here and carry .gpu"; return 1; fi
	fi
	[ -f .gpu/grammar.bench.xz ] && unxz_to .gpu/grammar.bench.xz "$GB"
	if [ -f .gpu/shared.txz ]; then
		(cd "$BUNDLE" && { tar xJf "$root/.gpu/shared.txz" 2>/dev/null || python3 -c "import tarfile,sys; tarfile.open(sys.argv[1]).extractall()" "$root/.gpu/shared.txz"; }) || return 1
	elif [ -d .gpu/shared ]; then cp -r .gpu/shared "$BUNDLE/" || return 1; fi
	[ -f "$VOCAB" ] || { note "no vocabulary at $VOCAB"; return 1; }
	echo "$stamp" > "$BUNDLE/.stamp"
}

# --- models ----------------------------------------------------------------
# spec NAME: the synth flags of a model name (arch-shape).
spec() {
	case $1 in
	llama-1b) echo "--arch llama --shape 1b" ;; llama-8b) echo "--arch llama --shape 8b" ;;
	phi3-mini) echo "--arch phi3 --shape mini" ;; gemma2-9b) echo "--arch gemma2 --shape 9b" ;;
	mixtral-8x7b) echo "--arch mixtral --shape 8x7b" ;; *) return 1 ;;
	esac
}
# model NAME: the file of model NAME (Q4_K_M), or M_<NAME> when given.
model() {
	local var
	var="M_$(echo "${1#llama-}" | tr 'a-z-' 'A-Z_')"
	[ -n "${!var:-}" ] && { echo "${!var}"; return; }
	echo "$MODELS/$1-Q4_K_M.gguf"
}
have() { local f; f=$(model "$1"); [ -f "$f" ] && { [ -f "$f.ok" ] || [ "$f" != "$MODELS/$1-Q4_K_M.gguf" ]; }; }
# synth NAME: writes the model unless it is there (a .ok file marks a whole one).
synth() {
	local name=$1 f need avail t0
	f=$(model "$name")
	[ "$DRY" = 0 ] && have "$name" && return 0
	need=${SIZE_GB[$name]:-5}
	if [ "$DRY" != 0 ]; then echo "+ $L synth $(spec "$name") --type Q4_K_M --vocab $VOCAB --workers $(nproc) -o $f"; return 0; fi
	mkdir -p "$MODELS" || return 1
	avail=$(free_gb "$MODELS")
	if [ "${avail:-0}" -lt $((need + 2)) ]; then note "synth $name: ${avail} GB free in $MODELS, about $need GB needed; skipped"; return 1; fi
	t0=$(date +%s)
	# shellcheck disable=SC2046
	timeout "$(tmo 900)" "$L" synth $(spec "$name") --type Q4_K_M --vocab "$VOCAB" --workers "$(nproc)" -o "$f.part" > "$MODELS/synth-$name.log" 2>&1 &&
		mv "$f.part" "$f" && touch "$f.ok" || { note "synth $name failed: $(tail -2 "$MODELS/synth-$name.log")"; rm -f "$f.part"; return 1; }
	echo "synth $name: $(( $(date +%s) - t0 )) s, $(du -BM "$f" | cut -f1)" >> "$MODELS/synth-times.txt"
}
# need NAME...: every model there, synthesized now where missing.
need() {
	local n ok=0
	for n in "$@"; do
		have "$n" && continue
		# Never beside the background synthesis of prep (it may be writing this one).
		if [ "$DRY" = 0 ] && bg_running; then note "$n: the background synthesis is still running; not synthesized again"; ok=1; continue; fi
		budget $(( ${SIZE_GB[$n]:-5} * 10 + 30 )) "synth $n" || { ok=1; continue; }
		synth "$n" || ok=1
	done
	return $ok
}
bg_running() { [ -s "$MODELS/synth.pid" ] && [ ! -f "$MODELS/synth.rc" ] && kill -0 "$(cat "$MODELS/synth.pid")" 2>/dev/null; }
llama_building() { [ -s "$LLAMA_DIR.pid" ] && [ ! -f "$LLAMA_DIR/build.rc" ] && kill -0 "$(cat "$LLAMA_DIR.pid")" 2>/dev/null; }
# quiet MAX: waits up to MAX s for background synthesis and build to end.
quiet() {
	[ "$DRY" != 0 ] && { echo "+ wait for background synthesis and llama.cpp build"; return 0; }
	local t0 max=$1
	t0=$(date +%s)
	while { bg_running || llama_building; } && [ $(( $(date +%s) - t0 )) -lt "$max" ] && [ "$(left)" -gt 60 ]; do sleep 3; done
	local w=$(( $(date +%s) - t0 ))
	[ "$w" -gt 0 ] && note "waited ${w}s for background work"
	if bg_running || llama_building; then note "background work still running: figures below may read low"; fi
}
lcpp() { [ -x "$LLAMA_BIN/llama-bench" ] && [ "$(cat "$LLAMA_DIR/build.rc" 2>/dev/null || echo 0)" = 0 ] || [ "$DRY" != 0 ]; }

# --- servers ---------------------------------------------------------------
SERVER_PID=
# serve_start LOG CMD...: starts a server on PORT, waits for /health 200.
serve_start() {
	local log=$1 t0
	shift
	if [ "$DRY" != 0 ]; then echo "+ $* > $log &  (wait for http://127.0.0.1:$PORT/health)"; return 0; fi
	echo "+ $*" > "$log"
	"$@" >> "$log" 2>&1 &
	SERVER_PID=$!
	t0=$(date +%s)
	while [ "$(http_code "http://127.0.0.1:$PORT/health")" != 200 ]; do
		if ! kill -0 "$SERVER_PID" 2>/dev/null; then note "server exited: $(tail -3 "$log")"; SERVER_PID=; return 1; fi
		if [ $(( $(date +%s) - t0 )) -gt 240 ] || [ "$(left)" -lt 30 ]; then note "server not ready: $log"; serve_stop; return 1; fi
		sleep 1
	done
	echo "ready after $(( $(date +%s) - t0 )) s" >> "$log"
}
serve_stop() {
	[ -n "$SERVER_PID" ] || return 0
	kill "$SERVER_PID" 2>/dev/null
	local _
	for _ in $(seq 1 30); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 1; done
	kill -9 "$SERVER_PID" 2>/dev/null
	wait "$SERVER_PID" 2>/dev/null
	SERVER_PID=
	sleep 2 # the device memory is given back
}
trap 'serve_stop; pack' EXIT
# bs LOG MAX FLAGS...: bench-serve against the server on PORT.
bs() { local log=$1 max=$2; shift 2; x "$log" "$max" "$L" bench-serve --url "http://127.0.0.1:$PORT" --timeout 5m "$@"; }

# --- phases ----------------------------------------------------------------
phase_prep() {
	local t0
	t0=$(date +%s)
	say "== prep ($(date -u +%H:%M:%S))"
	[ "$DRY" = 0 ] && { nproc; free -g; df -h / /opt /dev/shm "$MODELS"; nvidia-smi; } > "$LOGDIR/machine.txt" 2>&1
	if [ -f .gpu-llama/llama.cpp.tgz ]; then
		if [ "$DRY" != 0 ]; then DRY=1 bash scripts/llama-build.sh; else bash scripts/llama-build.sh 2>&1 | tee -a "$LOGDIR/targets-notes.txt"; fi
	else
		note "no .gpu-llama/llama.cpp.tgz (scripts/llama-pack.sh here, carry .gpu-llama): no llama.cpp figures"
	fi
	local names=${PREP_MODELS:-llama-1b llama-8b phi3-mini gemma2-9b mixtral-8x7b}
	if [ "$DRY" != 0 ]; then
		echo "+ setsid: synthesize $names into $MODELS (log $MODELS/synth.log)"
		for n in $names; do synth "$n"; done
	elif ! bg_running; then
		mkdir -p "$MODELS" && rm -f "$MODELS/synth.rc" "$MODELS/synth.pid"
		# The same script, one model at a time, in a session of its own (it
		# outlives this call while the machine stays warm).
		setsid bash -c "echo \$\$ > '$MODELS/synth.pid'; for n in $names; do MODELS='$MODELS' LLMSERVE='$L' VOCAB='$VOCAB' bash '$root/scripts/gpu-targets.sh' synth1 \$n; done > '$MODELS/synth.log' 2>&1; echo \$? > '$MODELS/synth.rc'" < /dev/null > /dev/null 2>&1 &
		sleep 1
	fi
	if [ "${PREP_TESTS:-0}" = 1 ]; then
		x "$LOGDIR/gpu-test.txt" "$(( PREP_WAIT - 30 ))" env LOGDIR="$LOGDIR/tests" bash scripts/gpu-test.sh
		grep -E -- '^[a-z_]+: [0-9]+ passed|^[0-9]+ passed' "$LOGDIR/gpu-test.txt" | tee -a "$summary"
	fi
	if [ "$DRY" = 0 ]; then
		while { bg_running || llama_building; } && [ $(( $(date +%s) - t0 )) -lt "$PREP_WAIT" ] && [ "$(left)" -gt 20 ]; do sleep 5; done
	fi
	say "prep: models in $MODELS: $(cd "$MODELS" 2>/dev/null && ls ./*.ok 2>/dev/null | sed 's|^\./||; s|-Q4_K_M.gguf.ok||' | tr '\n' ' ')"
	[ -f "$MODELS/synth-times.txt" ] && tee -a "$summary" < "$MODELS/synth-times.txt"
	say "prep: $(DRY=0 bash scripts/llama-build.sh --status 2>&1 | head -1); synthesis $(bg_running && echo 'still running' || echo 'done')"
	cp "$MODELS/synth.log" "${LLAMA_LOG:-/opt/llama-build.log}" "$LOGDIR/" 2>/dev/null
}

phase_arch() {
	say "== arch: issue 19, batch-1 decode, Q4_K_M synth models ($(date -u +%H:%M:%S))"
	quiet 300
	local n f v lv pp lpp
	# shellcheck disable=SC2086
	need ${ARCH_MODELS:-mixtral-8x7b gemma2-9b phi3-mini} ${ARCH_BASE-llama-1b llama-8b}
	for n in ${ARCH_MODELS:-mixtral-8x7b gemma2-9b phi3-mini}; do
		have "$n" || [ "$DRY" != 0 ] || { say "$(row "issue 19: $n Q4_K_M tg128 B=1 tok/s" "" "" "no model (see targets-notes.txt)")"; continue; }
		budget 100 "arch $n" || continue
		f=$(model "$n")
		x "$LOGDIR/arch-$n.txt" 240 "$L" bench -m "$f" -p "$ARCH_PROMPT" -n 128 -B 1 -r 3
		x "$LOGDIR/arch-$n-pp.txt" 120 "$L" bench -m "$f" -p 512 -n 1 -B 1 -r 3
		v=$(tokps "$LOGDIR/arch-$n.txt" '^tg128 B=1 ') pp=$(tokps "$LOGDIR/arch-$n-pp.txt" "^pp512:")
		lv='' lpp=''
		if lcpp && budget 60 "llama-bench $n"; then
			x "$LOGDIR/arch-$n-llama.txt" 200 "$LLAMA_BIN/llama-bench" -m "$f" -p 512 -n 128 -fa 1 -ngl 99 -r 3
			lv=$(lb_ts "$LOGDIR/arch-$n-llama.txt" tg128) lpp=$(lb_ts "$LOGDIR/arch-$n-llama.txt" pp512)
		fi
		say "$(row "issue 19: $n Q4_K_M tg128 B=1 tok/s" "$(fmt "$v" 1)" "$(fmt "$lv" 1)" ">= 2x llama.cpp = $(fmt "$(calc '2*a' a="$lv")")")"
		say "$(row "issue 19: $n Q4_K_M pp512 tok/s" "$(fmt "$pp")" "$(fmt "$lpp")" "-")"
	done
	for n in ${ARCH_BASE-llama-1b llama-8b}; do
		budget 45 "arch $n" || continue
		f=$(model "$n")
		x "$LOGDIR/arch-$n.txt" 120 "$L" bench -m "$f" -p 512 -n 128 -B 1 -r 3
		v=$(tokps "$LOGDIR/arch-$n.txt" '^tg128 B=1 ')
		lv=''
		if lcpp && budget 30 "llama-bench $n"; then
			x "$LOGDIR/arch-$n-llama.txt" 90 "$LLAMA_BIN/llama-bench" -m "$f" -p 0 -n 128 -fa 1 -ngl 99 -r 3
			lv=$(lb_ts "$LOGDIR/arch-$n-llama.txt" tg128)
		fi
		say "$(row "issue 19: $n Q4_K_M tg128 B=1 tok/s (was ${BASE_TG[$n]})" "$(fmt "$v" 1)" "$(fmt "$lv" 1)" ">= $(fmt "$(calc '0.98*a' a="${BASE_TG[$n]}")") (-2%): $(fmt "$(calc '100*v/b-100' v="$v" b="${BASE_TG[$n]}")" 1)%")"
	done
}

phase_constrained() {
	say "== constrained: issue 17, 1B Q4_K_M ($(date -u +%H:%M:%S))"
	quiet 300
	need llama-1b || true
	local f b
	f=$(model llama-1b)
	if budget 90 "constrained bench"; then
		b="$LOGDIR/constrained-1b.txt"
		x "$b" 200 "$L" bench -m "$f" -p 512 -n 128 -B 1,16 -r 3 --json-schema "$SCHEMA_FILE" --constrained-share 0.5
		say "$(row "issue 17: B=1 constrained, % of unconstrained tok/s" "$(ctg_pct "$b" 1 1)" "" ">= 95")"
		say "$(row "issue 17: B=16, 8 constrained, % of unconstrained tok/s" "$(ctg_pct "$b" 16 8)" "" ">= 90")"
		say "$(row "issue 17: B=16, all constrained, % (for the record)" "$(ctg_pct "$b" 16 16)" "" "-")"
		say "$(row "issue 17: tg128 B=1 / B=16 unconstrained tok/s" "$(fmt "$(tokps "$b" '^tg128 B=1 ')")/$(fmt "$(tokps "$b" '^tg128 B=16 ')")" "" "-")"
		say "$(row "issue 17: schema compile in bench (its vocabulary), ms" "$(fmt "$(compile_ms "$b")" 2)" "" "<= 20")"
	fi
	if budget 60 "constrained cold"; then
		b="$LOGDIR/constrained-1b-cold.txt"
		x "$b" 120 "$L" bench -m "$f" -p 512 -n 128 -B 1 -r 3 --json-schema "$SCHEMA_FILE" --cold-grammar
		say "$(row "issue 17: B=1 constrained, new grammar engine each run, %" "$(ctg_pct "$b" 1 1)" "" "(for the record)")"
	fi
	if [ -x "$GB" ] || [ "$DRY" != 0 ]; then
		if budget 60 "grammar benchmarks"; then
			b="$LOGDIR/grammar-bench.txt"
			(cd grammar && x "$b" 120 env LLMSERVE_SHARED="$BUNDLE/shared" "$GB" -test.run '^$' -test.bench 'CompileSchema|Mask' -test.benchtime 20x)
			say "$(row "issue 17: BenchmarkCompileSchema (20 properties), ms" "$(fmt "$(calc 'a/1e6' a="$(gobench "$b" BenchmarkCompileSchema/compile ns/op)")" 2)" "" "<= 20")"
			say "$(row "issue 17: BenchmarkMask warm / first-use, us per step" "$(fmt "$(gobench "$b" BenchmarkMask/warm µs/step)" 1)/$(fmt "$(gobench "$b" BenchmarkMask/first-use µs/step)" 1)" "" "-")"
		fi
	else
		note "no $GB (gpu-bundle.sh builds .gpu/grammar.bench): grammar benchmarks skipped"
	fi
}

# serve_suite NAME: the serving measurements against the server on PORT.
# Sets the figures in the global associative array R[NAME/...].
declare -A R
chat_turns() { # NAME
	local a="$LOGDIR/serve-$1-chat1.txt" b="$LOGDIR/serve-$1-chat2.txt"
	skip chat && return 0
	budget 40 "$1 chat turns" || return 0
	# Turn 1: 3950 shared tokens + 50 of its own, cold. Turn 2: two clients
	# at once, the same 3950 + 50 (client 0: turn 1's own, client 1: new
	# ones), so at least one lands on another slot than turn 1. (Prompt
	# lengths are about right, within ~1%: 4000 + 8 stay in a 4096 slot.)
	bs "$a" 120 -c 1 -r 1 --prompt-tokens 4000 --prefix-tokens 3950 --max-tokens 8 --temperature 0 --seed 4001
	bs "$b" 120 -c 2 -r 1 --prompt-tokens 4000 --prefix-tokens 3950 --max-tokens 8 --temperature 0 --seed 4001
	R[$1/ttft1]=$(bs_stat "$a" 'time to 1st token' max) R[$1/ttft2]=$(bs_stat "$b" 'time to 1st token' max)
	R[$1/ttft2min]=$(bs_stat "$b" 'time to 1st token' p50)
}
streams_gap() { # NAME
	local a="$LOGDIR/serve-$1-16streams.txt" b="$LOGDIR/serve-$1-longprompt.txt"
	skip streams && return 0
	budget 60 "$1 16 streams + 4000-token prompt" || return 0
	if [ "$DRY" != 0 ]; then
		echo "+ (bench-serve -c 16 --max-tokens 1024 --ignore-eos &); sleep 3; bench-serve -c 1 --prompt-tokens 4000 --max-tokens 8"
		return 0
	fi
	# 1024 tokens each: still streaming when the prompt comes (16 streams of
	# 8B run at 40-110 tok/s each).
	bs "$a" 150 -c 16 -r 1 --prompt-tokens 110 --max-tokens 1024 --ignore-eos --temperature 0 --seed 5001 &
	local p=$!
	sleep 3 # the 16 are decoding
	# About 4000 tokens: 4096 with 8 to generate would pass the slot's context.
	bs "$b" 120 -c 1 -r 1 --prompt-tokens 4000 --max-tokens 8 --temperature 0 --seed 6001
	wait "$p"
	R[$1/gapmax]=$(bs_stat "$a" 'inter-token gap' max) R[$1/gap99]=$(bs_stat "$a" 'inter-token gap' p99)
	R[$1/longttft]=$(bs_stat "$b" 'time to 1st token' max)
}
http64() { # NAME
	local a="$LOGDIR/serve-$1-http64.txt"
	skip http64 && return 0
	budget 60 "$1 HTTP 64 x 2 x 256" || return 0
	bs "$a" 200 -c 64 -r 2 --prompt-tokens 110 --max-tokens 256 --ignore-eos --temperature 0 --seed 7001
	R[$1/tokps]=$(bs_tokps "$a") R[$1/ttft99]=$(bs_stat "$a" 'time to 1st token' p99)
	R[$1/itl99]=$(bs_stat "$a" 'inter-token gap' p99)
	[ -f "$a" ] && R[$1/ok]="$(bs_ok "$a")/$(bs_sent "$a")"
}
full64() { # NAME: 64 requests of ~4030 tokens at once, all slots full.
	local a="$LOGDIR/serve-$1-full64.txt"
	skip full64 && return 0
	budget 120 "$1 64 x 4096 in one run" || return 0
	bs "$a" 240 -c 64 -r 1 --prompt-tokens 3900 --max-tokens 128 --ignore-eos --temperature 0 --seed 8001
	[ -f "$a" ] && R[$1/fullok]="$(bs_ok "$a")/$(bs_sent "$a")"
	R[$1/fullmem]=$(gpu_mem_mib)
}

phase_serve() {
	say "== serve: issue 18, 8B Q4_K_M unless named ($(date -u +%H:%M:%S))"
	quiet 300
	need llama-8b llama-1b || true
	local m8 m1 b kv mem0 mem1 met
	m8=$(model llama-8b) m1=$(model llama-1b)
	# An 8000-token prompt, then 128 steps at depth 8000: default cache and
	# the paged f16 pool.
	for kv in flat f16; do
		budget 60 "bench -p 8000 ($kv)" || continue
		b="$LOGDIR/serve-bench8000-$kv.txt"
		if [ $kv = f16 ]; then x "$b" 200 "$L" bench -m "$m8" -p 8000 -n 128 -B 1 -r 2 -ctk f16 -ctv f16
		else x "$b" 200 "$L" bench -m "$m8" -p 8000 -n 128 -B 1 -r 2 -ctk f32 -ctv f32; fi
		R[pp8000/$kv]=$(tokps "$b" '^pp8000:') R[tg8000/$kv]=$(tokps "$b" '^tg128 B=1 ')
	done
	if lcpp && budget 40 "llama-batched-bench at depth 8000"; then
		x "$LOGDIR/serve-bb8000-llama.txt" 120 "$LLAMA_BIN/llama-batched-bench" -m "$m8" -c 8192 -b 2048 -ub 512 -npp 8000 -ntg 128 -npl 1 -fa -ngl 99
		R[pp8000/llama]=$(bb_col "$LOGDIR/serve-bb8000-llama.txt" 8000 128 1 S_PP) R[tg8000/llama]=$(bb_col "$LOGDIR/serve-bb8000-llama.txt" 8000 128 1 S_TG)
	fi
	say "$(row "issue 18: prompt of 8000 tokens, tok/s (f32 cache / paged f16)" "$(fmt "${R[pp8000/flat]:-}")/$(fmt "${R[pp8000/f16]:-}")" "$(fmt "${R[pp8000/llama]:-${CUDAMD[llama-8b/pp8000]}}")" "8100 (stretch 16000)")"
	say "$(row "issue 18: decode at depth 8000, B=1 tok/s (f32 / f16)" "$(fmt "${R[tg8000/flat]:-}")/$(fmt "${R[tg8000/f16]:-}")" "$(fmt "${R[tg8000/llama]:-${CUDAMD[llama-8b/tg@8000]}}")" "360")"

	# llmserve, 64 slots x 4096, paged f16 pool with the prefix cache.
	if budget 150 "llmserve 8B server"; then
		mem0=$(gpu_mem_mib)
		if serve_start "$LOGDIR/serve-llmserve-8b.log" "$L" serve -m "$m8" --port "$PORT" -np 64 -c 4096 -ctk f16 -ctv f16 --queue 256; then
			mem1=$(gpu_mem_mib) met="$LOGDIR/serve-llmserve-8b-metrics0.txt"
			[ "$DRY" = 0 ] && http_get "http://127.0.0.1:$PORT/metrics" > "$met"
			R[ls/pool]=$(metric "$met" llmserve_kv_pool_bytes) R[ls/bpt]=$(metric "$met" llmserve_kv_bytes_per_token)
			[ -n "${R[ls/pool]}" ] || R[ls/pool]=$(logfield "$LOGDIR/serve-llmserve-8b.log" pool_bytes)
			R[ls/mem]=$(calc 'b-a' a="$mem0" b="$mem1")
			chat_turns ls
			streams_gap ls
			http64 ls
			full64 ls
			[ "$DRY" = 0 ] && http_get "http://127.0.0.1:$PORT/metrics" > "$LOGDIR/serve-llmserve-8b-metrics1.txt"
			serve_stop
		fi
	fi
	# llmserve 1B: the HTTP load alone.
	if budget 60 "llmserve 1B server" && serve_start "$LOGDIR/serve-llmserve-1b.log" "$L" serve -m "$m1" --port "$PORT" -np 64 -c 4096 -ctk f16 -ctv f16 --queue 256; then
		http64 ls1
		serve_stop
	fi
	# llama-server: 64 slots x 4096 (memory, chat, 16 streams), then as
	# ../shared/CUDA.md gives its figures (-c 65536: 1024 a slot), 8B and 1B.
	if lcpp && [ -x "$LLAMA_BIN/llama-server" ] || [ "$DRY" != 0 ]; then
		if budget 100 "llama-server 8B, 64 x 4096"; then
			mem0=$(gpu_mem_mib)
			if serve_start "$LOGDIR/serve-llama-8b-4096.log" "$LLAMA_BIN/llama-server" -m "$m8" --port "$PORT" -np 64 -c 262144 -fa -ngl 99 -cb; then
				R[lc/mem]=$(calc 'b-a' a="$mem0" b="$(gpu_mem_mib)")
				chat_turns lc
				streams_gap lc
				serve_stop
			fi
		fi
		if budget 80 "llama-server 8B" && serve_start "$LOGDIR/serve-llama-8b.log" "$LLAMA_BIN/llama-server" -m "$m8" --port "$PORT" -np 64 -c 65536 -fa -ngl 99 -cb; then
			http64 lc
			serve_stop
		fi
		if budget 60 "llama-server 1B" && serve_start "$LOGDIR/serve-llama-1b.log" "$LLAMA_BIN/llama-server" -m "$m1" --port "$PORT" -np 64 -c 65536 -fa -ngl 99 -cb; then
			http64 lc1
			serve_stop
		fi
	fi
	local lcmem
	lcmem=$(fmt "$(calc 'a/1024' a="${R[lc/mem]:-}")" 1)
	[ "$lcmem" = - ] && lcmem="34 KV(issue)"
	say "$(row "issue 18: KV pool 64 x 4096 f16, GB (bytes/token ${R[ls/bpt]:-?})" "$(fmt "$(calc 'a/1e9' a="${R[ls/pool]:-}")" 1)" "-" "<= 36")"
	say "$(row "issue 18: GPU memory of the 64 x 4096 server, GiB" "$(fmt "$(calc 'a/1024' a="${R[ls/mem]:-}")" 1)" "$lcmem" "(weights + KV + buffers)")"
	say "$(row "issue 18: 64 x ~4030 tokens at once, requests ok (GPU MiB after)" "${R[ls/fullok]:--} (${R[ls/fullmem]:--})" "-" "64/64")"
	say "$(row "issue 18: 4000-token chat TTFT ms, turn 2 max(min) / turn 1" "$(fmt "${R[ls/ttft2]:-}")($(fmt "${R[ls/ttft2min]:-}"))/$(fmt "${R[ls/ttft1]:-}")" "$(fmt "${R[lc/ttft2]:-}")($(fmt "${R[lc/ttft2min]:-}"))/$(fmt "${R[lc/ttft1]:-}")" "<= 10%: $(fmt "$(calc '100*a/b' a="${R[ls/ttft2]:-}" b="${R[ls/ttft1]:-}")")% (llama.cpp $(fmt "$(calc '100*a/b' a="${R[lc/ttft2]:-}" b="${R[lc/ttft1]:-}")")%)")"
	say "$(row "issue 18: 16 streams + ~4000-token prompt, worst gap ms (p99)" "$(fmt "${R[ls/gapmax]:-}")($(fmt "${R[ls/gap99]:-}"))" "$(fmt "${R[lc/gapmax]:-}")($(fmt "${R[lc/gap99]:-}"))" "<= 80")"
	say "$(row "issue 18: HTTP 64 x 2 x 256 8B, tok/s (ok ${R[ls/ok]:--})" "$(fmt "${R[ls/tokps]:-}")" "$(fmt "${R[lc/tokps]:-${CUDAMD[http-8b/tokps]}}")" "3500")"
	say "$(row "issue 18: same, time to first token p99 ms" "$(fmt "${R[ls/ttft99]:-}")" "$(fmt "${R[lc/ttft99]:-${CUDAMD[http-8b/ttft99]}}")" "500")"
	say "$(row "issue 18: same, inter-token gap p99 ms" "$(fmt "${R[ls/itl99]:-}")" "$(fmt "${R[lc/itl99]:-${CUDAMD[http-8b/itl99]}}")" "60")"
	say "$(row "issue 18: HTTP 64 x 2 x 256 1B, tok/s (ok ${R[ls1/ok]:--})" "$(fmt "${R[ls1/tokps]:-}")" "$(fmt "${R[lc1/tokps]:-${CUDAMD[http-1b/tokps]}}")" "10000")"
	lcpp && [ -n "${R[lc/tokps]:-}" ] || say "(llama.cpp column: ../shared/CUDA.md's figures where llama-server did not run in this call)"
}

phase_llama() {
	say "== llama: llama.cpp c392e50 in this call (measured) beside ../shared/CUDA.md (llama.cpp column) ($(date -u +%H:%M:%S))"
	quiet 300
	lcpp || { say "llama: llama.cpp is not built ($LLAMA_BIN): bash scripts/llama-build.sh --wait"; return 0; }
	need llama-1b llama-8b || true
	local n f b B
	for n in llama-1b llama-8b; do
		f=$(model "$n")
		if budget 50 "llama-bench $n"; then
			b="$LOGDIR/llama-bench-$n.txt"
			x "$b" 150 "$LLAMA_BIN/llama-bench" -m "$f" -p 512 -n 128 -fa 1 -ngl 99 -r 3
			say "$(row "llama.cpp $n Q4_K_M pp512 tok/s" "$(fmt "$(lb_ts "$b" pp512)")" "${CUDAMD[$n/pp512]}" "-")"
			say "$(row "llama.cpp $n Q4_K_M tg128 tok/s" "$(fmt "$(lb_ts "$b" tg128)" 1)" "${CUDAMD[$n/tg128]}" "-")"
		fi
		if budget 60 "llama-batched-bench $n"; then
			b="$LOGDIR/llama-batched-$n.txt"
			x "$b" 180 "$LLAMA_BIN/llama-batched-bench" -m "$f" -c 16384 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,16,64 -fa -ngl 99
			for B in 1 16 64; do
				say "$(row "llama.cpp $n Q4_K_M batched S_TG B=$B tok/s" "$(fmt "$(bb_col "$b" 128 128 $B S_TG)")" "${CUDAMD[$n/bb$B]}" "-")"
			done
		fi
	done
	f=$(model llama-8b)
	if budget 50 "llama-batched-bench at depth"; then
		b="$LOGDIR/llama-batched-depth.txt"
		x "$b" 150 "$LLAMA_BIN/llama-batched-bench" -m "$f" -c 8192 -b 2048 -ub 512 -npp 2000,8000 -ntg 128 -npl 1 -fa -ngl 99
		for d in 2000 8000; do
			say "$(row "llama.cpp 8B Q4_K_M prompt of $d, tok/s / then tg tok/s" "$(fmt "$(bb_col "$b" $d 128 1 S_PP)")/$(fmt "$(bb_col "$b" $d 128 1 S_TG)")" "${CUDAMD[llama-8b/pp$d]}/${CUDAMD[llama-8b/tg@$d]}" "-")"
		done
	fi
}

# --- main ------------------------------------------------------------------
if [ "${1:-}" = synth1 ]; then # internal: the background synthesis of prep
	L=$LLMSERVE
	synth "$2"
	exit $?
fi
[ $# -gt 0 ] || { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
for p in "$@"; do
	case $p in prep | arch | constrained | serve | llama) ;; *) echo "gpu-targets: unknown phase $p (prep, arch, constrained, serve, llama)" >&2; exit 2 ;; esac
done
if [ "$DRY" = 0 ] && [ "$NO_GPU" = 0 ] && ! nvidia-smi -L > /dev/null 2>&1; then
	echo "gpu-targets: no GPU here (DRY=1 prints the commands; NO_GPU=1 with M_1B=... runs on the CPU)" >&2; exit 1
fi
{ [ "$DRY" = 0 ] && mkdir -p "$(dirname "$ALL")" 2>/dev/null; } || ALL=/dev/null
pick_models
unpack || exit 1
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
say "gpu-targets $* on ${gpu:-no GPU}, $(date -u +%FT%TZ); columns: target | measured | llama.cpp | must reach"
for p in "$@"; do
	"phase_$p"
	pack
done
say "gpu-targets: done in $(elapsed) s"
