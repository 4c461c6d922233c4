#!/usr/bin/env bash
# Benchmarks llmserve's CUDA engine where the GPU is, with nothing to build
# there: it runs a cuda-built llmserve binary (LLMSERVE, default
# .gpu/llmserve, unpacked from LLMSERVE.gz when only that is there; make it
# with `go build -tags cuda -ldflags='-s -w' -o .gpu/llmserve ./cmd/llmserve`)
# that synthesizes llama models of the Llama-3.2-1B and Llama-3.1-8B shapes
# with the 128256-token llama-bpe vocabulary (VOCAB, default
# .gpu/shared/vocab/ggml-vocab-llama-bpe.gguf) into a temporary folder
# (BENCH_TMP, default TMPDIR; each is synthesized just before it is
# measured, never during a measurement: a synthesis running beside graph
# replays slowed them by up to 20%, and each is deleted after), and for each
# prints:
#   - batch-1 generation (tg128) tok/s with CUDA graphs on and off,
#   - aggregate generation tok/s for B sequences decoding together, 128
#     steps after a prompt of BATCH_PROMPT tokens (default 128: the
#     workload of llama-batched-bench -npp 128 -ntg 128, which gives the
#     llama.cpp column of those rows),
#   - prompt processing (pp512) tok/s,
# each beside the weight-streaming roofline (steps/s <= 4255 GB/s, the H200, / bytes of
# weights read per step, from `llmserve inspect`; times the tokens per step:
# B for decoding, 64 for a prompt, which runs in chunks of 64) and beside
# llama.cpp's figure on the same H200 (../shared/CUDA.md), plus the wall
# time of the synthesis. Each rate is the best of 3 runs. The log of each
# model also holds the device time of every kernel of one decode step at
# position 512, of one step of the largest B sequences there, and of one
# 512-token prompt step (`bench --profile`: a graph replay with an event
# after every kernel), and the largest B's tok/s at depth 512. Full logs go
# to LOGDIR (default .gpu/logs); a short table of everything is printed
# last.
#
# Arguments: models as shape/type (default: 1b/Q4_K_M 1b/Q8_0 1b/F16
# 8b/Q4_K_M 8b/Q8_0 8b/F16). BATCHES (default 1,2,4,8,16,32,64) and
# BATCHES_8B_F16 (default 1,4,16,64) are the B values. MODELDIR, when set,
# is a folder of models synthesized before (llama-<shape>-<type>.gguf, as
# `llmserve synth` with the same vocabulary writes them): those found there
# are measured as they are and kept.
#
# SCHEMA=1 adds constrained decoding (issue 17's targets): `bench
# --json-schema` with SCHEMA_FILE (default scripts/bench-schema.json, 20
# properties) at SCHEMA_BATCHES (default 1,16), every sequence constrained
# and half of them, beside the same run unconstrained; the rows "ctg128"
# give tok/s and, in the last column, the share of the unconstrained tok/s
# (targets: B=1 all constrained >= 95%, B=16 half constrained >= 90%).
#
#   bash scripts/bench-gpu.sh               # all six, about 8 minutes on an H200
#   LOGDIR=$OUT bash .gpu/scripts/bench-gpu.sh 1b/Q4_K_M
#   SCHEMA=1 LOGDIR=$OUT bash .gpu/scripts/bench-gpu.sh 1b/Q4_K_M
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd) # the repository, or .gpu when run as .gpu/scripts/bench-gpu.sh
first() { for f in "$@"; do [ -e "$f" ] || [ -e "$f.gz" ] || [ -e "$f.xz" ] && { echo "$f"; return; }; done; echo "$1"; }
# A bundle from scripts/gpu-bundle.sh carries the shared data as .gpu/shared.txz.
if [ -e "$root/.gpu/shared.txz" ] && [ ! -d "$root/.gpu/shared" ]; then
	(cd "$root/.gpu" && { tar xJf shared.txz 2>/dev/null || python3 -c "import tarfile; tarfile.open('shared.txz').extractall()"; })
fi
LLMSERVE=${LLMSERVE:-$(first "$root/.gpu/llmserve" "$root/llmserve")}
VOCAB=${VOCAB:-$(first "$root/.gpu/shared/vocab/ggml-vocab-llama-bpe.gguf" "$root/shared/vocab/ggml-vocab-llama-bpe.gguf")}
LOGDIR=${LOGDIR:-.gpu/logs}
BATCHES=${BATCHES:-1,2,4,8,16,32,64}
BATCHES_8B_F16=${BATCHES_8B_F16:-1,4,16,64}
BATCH_PROMPT=${BATCH_PROMPT:-128}
SCHEMA=${SCHEMA:-0}
SCHEMA_FILE=${SCHEMA_FILE:-$root/scripts/bench-schema.json}
SCHEMA_BATCHES=${SCHEMA_BATCHES:-1,16}
# Models are synthesized on all but SPARE_CORES cores.
SPARE_CORES=${SPARE_CORES:-2}
workers=$(( $(nproc) - SPARE_CORES )); [ "$workers" -ge 1 ] || workers=1
MODELS=("$@")
[ ${#MODELS[@]} -gt 0 ] || MODELS=(1b/Q4_K_M 1b/Q8_0 1b/F16 8b/Q4_K_M 8b/Q8_0 8b/F16)
mkdir -p "$LOGDIR"
if [ ! -e "$LLMSERVE" ] && [ -e "$LLMSERVE.gz" ]; then gunzip -f "$LLMSERVE.gz" && chmod +x "$LLMSERVE"; fi
if [ ! -e "$LLMSERVE" ] && [ -e "$LLMSERVE.xz" ]; then
	{ xz -d -f "$LLMSERVE.xz" 2>/dev/null || python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$LLMSERVE.xz"; } && chmod +x "$LLMSERVE"
fi
nvidia-smi -L >/dev/null 2>&1 || { echo "bench-gpu: no GPU here" >&2; exit 1; }
[ -x "$LLMSERVE" ] || { echo "bench-gpu: no llmserve binary at $LLMSERVE (go build -tags cuda -o $LLMSERVE ./cmd/llmserve)" >&2; exit 1; }
[ -f "$VOCAB" ] || { echo "bench-gpu: no vocabulary at $VOCAB" >&2; exit 1; }
[ "$SCHEMA" = 0 ] || [ -f "$SCHEMA_FILE" ] || { echo "bench-gpu: SCHEMA=1 and no schema at $SCHEMA_FILE" >&2; exit 1; }
tmp=$(mktemp -d "${BENCH_TMP:-${TMPDIR:-/tmp}}/llmserve-bench.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# llama.cpp on the same H200 (../shared/CUDA.md, "Reference figures"):
# pp512, tg128 with graphs, tg128 without graphs ("-" where not measured).
# llama.cpp c392e50 on the same files (../shared/CUDA.md), and what issue 21
# asks llmserve to reach (MUST_*).
declare -A LCPP_PP=([1b/Q4_K_M]=35371 [1b/Q8_0]=42751 [8b/Q4_K_M]=9100 [8b/Q8_0]=10510 [8b/F16]=19145)
declare -A LCPP_TG=([1b/Q4_K_M]=586 [1b/Q8_0]=517 [8b/Q4_K_M]=217 [8b/Q8_0]=196 [8b/F16]=162)
declare -A LCPP_TG_NOGRAPH=([1b/Q4_K_M]=404 [8b/Q4_K_M]=195)
declare -A LCPP_BATCH=([1b/Q4_K_M/1]=336 [1b/Q4_K_M/16]=2701 [1b/Q4_K_M/64]=4847
	[8b/Q4_K_M/1]=159 [8b/Q4_K_M/16]=1125 [8b/Q4_K_M/64]=2316
	[8b/Q8_0/1]=148 [8b/Q8_0/16]=1060 [8b/Q8_0/64]=2182)
declare -A MUST_PP=([1b/Q4_K_M]=35000 [1b/Q8_0]=42000 [8b/Q4_K_M]=9100 [8b/Q8_0]=10500 [8b/F16]=19000)
declare -A MUST_BATCH=([1b/Q4_K_M/64]=9700 [8b/Q4_K_M/16]=2250 [8b/Q4_K_M/64]=4600 [8b/Q8_0/64]=4400)

summary="$LOGDIR/bench-summary.txt"
: > "$summary"
row() { printf '%-11s %-11s %-16s %10s %10s %10s %7s %10s\n' "$@"; }
row model measure '' 'tok/s' roofline llama.cpp '%roof' 'must reach' | tee -a "$summary"
status=0
# tokps LOG PATTERN: the tok/s figure of the bench output line matching PATTERN.
tokps() { awk -v pat="$2" '$0 ~ pat { for (i = 1; i < NF; i++) if ($(i+1) == "tok/s") { print $i; exit } }' "$1"; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b > 0) printf "%.0f%%", 100 * a / b; else print "-" }'; }
roof() { awk -v bytes="$1" -v n="$2" 'BEGIN { printf "%.0f", n * 4255e9 / bytes }'; }

# synth I: synthesizes model I and prints its exit status and wall time.
synth() {
	local spec=${MODELS[$1]}
	local shape=${spec%/*} type=${spec#*/}
	local start rc
	start=$(date +%s.%N)
	"$LLMSERVE" synth --arch llama --shape "$shape" --type "$type" --vocab "$VOCAB" --workers "$workers" \
		-o "$tmp/llama-$shape-$type.gguf" > "$LOGDIR/synth-$shape-$type.log" 2>&1
	rc=$?
	echo "$rc $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')"
}

for i in "${!MODELS[@]}"; do
	spec=${MODELS[$i]}
	shape=${spec%/*} type=${spec#*/}
	name="${shape}-${type}"
	model="$tmp/llama-$name.gguf"
	log="$LOGDIR/bench-$name.log"
	if [ -n "${MODELDIR:-}" ] && [ -f "$MODELDIR/llama-$name.gguf" ]; then
		model="$MODELDIR/llama-$name.gguf"
		echo "== llama $spec: $model, synthesized before" > "$log"
		synth_s=- cores=given
	else
		read -r rc synth_s < <(synth "$i")
		if [ "$rc" -ne 0 ]; then
			echo "bench-gpu: synth $spec failed, see $LOGDIR/synth-$name.log" >&2; status=1; continue
		fi
		echo "== llama $spec: synthesized in ${synth_s}s on $workers cores" > "$log"
		synth_s=${synth_s}s cores="$workers cores"
	fi
	"$LLMSERVE" inspect "$model" > "$LOGDIR/inspect-$name.txt" 2>&1
	bytes=$(sed -n 's/^weights read per generated token: .*(\([0-9]*\) bytes).*/\1/p' "$LOGDIR/inspect-$name.txt")
	if [ -z "$bytes" ]; then
		echo "bench-gpu: inspect $spec printed no bytes per token, see $LOGDIR/inspect-$name.txt" >&2; status=1; continue
	fi
	batches=$BATCHES
	[ "$spec" = 8b/F16 ] && batches=$BATCHES_8B_F16
	g="$LOGDIR/bench-$name-graphs.log" ng="$LOGDIR/bench-$name-nographs.log"
	bb="$LOGDIR/bench-$name-batched.log" deep=1
	[ "${batches##*,}" = 1 ] || deep=1,${batches##*,} # B=1 and the largest B at depth 512
	"$LLMSERVE" bench -m "$model" -p 512 -n 128 -B "$deep" -r 3 --profile > "$g" 2>&1 || { echo "bench-gpu: bench $spec failed:" >&2; tail -3 "$g" >&2; status=1; }
	"$LLMSERVE" bench -m "$model" -p "$BATCH_PROMPT" -n 128 -B "$batches" -r 3 > "$bb" 2>&1 || { echo "bench-gpu: bench $spec -p $BATCH_PROMPT failed:" >&2; tail -3 "$bb" >&2; status=1; }
	"$LLMSERVE" bench -m "$model" -p 0 -n 128 -B 1 -r 3 --no-cuda-graphs > "$ng" 2>&1 || { echo "bench-gpu: bench $spec --no-cuda-graphs failed:" >&2; tail -3 "$ng" >&2; status=1; }
	cs="$LOGDIR/bench-$name-schema.log"
	if [ "$SCHEMA" != 0 ]; then
		"$LLMSERVE" bench -m "$model" -p 512 -n 128 -B "$SCHEMA_BATCHES" -r 3 --json-schema "$SCHEMA_FILE" --constrained-share 0.5 > "$cs" 2>&1 ||
			{ echo "bench-gpu: bench $spec --json-schema failed:" >&2; tail -3 "$cs" >&2; status=1; }
		cat "$cs" >> "$log"
	fi
	cat "$g" "$bb" "$ng" >> "$log"
	[ "$model" = "$tmp/llama-$name.gguf" ] && rm -f "$model"
	{
		row "$spec" synth "$cores" "$synth_s" '' '' ''
		v=$(tokps "$g" '^tg128 B=1 ')
		row "$spec" 'tg128 B=1' 'graphs' "$v" "$(roof "$bytes" 1)" "${LCPP_TG[$spec]:--}" "$(pct "$v" "$(roof "$bytes" 1)")"
		v=$(tokps "$ng" '^tg128 B=1 ')
		row "$spec" 'tg128 B=1' 'no graphs' "$v" "$(roof "$bytes" 1)" "${LCPP_TG_NOGRAPH[$spec]:--}" "$(pct "$v" "$(roof "$bytes" 1)")"
		for B in ${batches//,/ }; do
			v=$(tokps "$bb" "^tg128 B=$B ")
			row "$spec" "tg128 B=$B" "after $BATCH_PROMPT" "$v" "$(roof "$bytes" "$B")" "${LCPP_BATCH[$spec/$B]:--}" "$(pct "$v" "$(roof "$bytes" "$B")")" "${MUST_BATCH[$spec/$B]:--}"
		done
		v=$(tokps "$g" '^pp512:')
		row "$spec" pp512 '' "$v" "$(roof "$bytes" 64)" "${LCPP_PP[$spec]:--}" "$(pct "$v" "$(roof "$bytes" 64)")" "${MUST_PP[$spec]:--}"
		if [ "$SCHEMA" != 0 ]; then
			# ctg128 B=b c=k lines: tok/s, then "(NN.N% of unconstrained".
			awk -v spec="$spec" '/^ctg128 B=/ { b = $2; c = $3; sub(/^c=/, "", c); sub(/^B=/, "", b)
				r = $6; sub(/^\(/, "", r)
				printf "%-11s %-11s %-16s %10s %10s %10s %7s\n", spec, "ctg128 B=" b, "json " c "/" b, $4, "", "", r }' "$cs"
		fi
	} | tee -a "$summary"
done
echo
echo "roofline: tokens per step x 4255 GB/s / bytes of weights read per step (llmserve inspect);"
echo "llama.cpp: ../shared/CUDA.md (same H200; batched figures: llama-batched-bench S_TG, for Q4_K_M and 8B Q8_0). Logs: $LOGDIR"
echo "must reach: the targets of issue 21 (pp512 and batched decode)"
[ "$SCHEMA" = 0 ] || echo "ctg128 rows (SCHEMA=1): c of b sequences constrained by $SCHEMA_FILE; last column: % of the unconstrained tg128 tok/s of the same run"
cat "$summary"
exit $status
