#!/usr/bin/env bash
# One device call's worth of checks, from a bundle of scripts/gpu-bundle.sh
# (carry .gpu). Phases (default all):
#   tests   every CUDA test
#   kbench  the tensor-core product and prompt-attention benchmarks (TFLOP/s)
#   bench   pp512 and batched decode on the f32 cache beside the paged f16
#           pool (-ctk f16 -ctv f16) and the 16-bit quantized products from
#           16 tokens (LLMSERVE_MATMUL_Q16=1; BENCH_MODES picks), and the profile of a
#           512-token prompt step, on synth models
# Logs and a summary go to LOGDIR (default .gpu/logs); MODELS overrides the
# bench models (default 1b/Q4_K_M 8b/Q4_K_M 8b/Q8_0 8b/F16).
set -uo pipefail
cd "$(dirname "$0")/.."
LOGDIR=${LOGDIR:-.gpu/logs}
mkdir -p "$LOGDIR"
phases=${*:-tests kbench bench}
summary="$LOGDIR/validate-summary.txt"
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
for phase in $phases; do
	case $phase in
	tests)
		LOGDIR="$LOGDIR" bash scripts/gpu-test.sh > "$LOGDIR/gpu-test.txt" 2>&1
		grep -E -- 'passed|--- FAIL|exit' "$LOGDIR/gpu-test.txt" | head -60 | tee -a "$summary"
		;;
	kbench)
		[ -x .gpu/kernels.test ] || bash scripts/gpu-test.sh -test.run '^$' > /dev/null 2>&1 # unpacks the bundle
		# BenchmarkGPUMatMul and BenchmarkGPUMatMulQ16 time every variant once
		# (-test.benchtime 1x, by device events); the others loop 20 times.
		(cd kernels && timeout 300 ../.gpu/kernels.test -test.run '^$' -test.bench 'GPUMatMul$|GPUMatMulQ16' -test.benchtime 1x) > "$LOGDIR/kbench.txt" 2>&1
		(cd kernels && timeout 200 ../.gpu/kernels.test -test.run '^$' -test.bench 'GPUMatMulHalf|GPUAttentionPrefill' -test.benchtime 20x) >> "$LOGDIR/kbench.txt" 2>&1
		grep -E 'TFLOP|mmq-best' "$LOGDIR/kbench.txt" | head -80 | tee -a "$summary"
		;;
	bench)
		[ -x .gpu/llmserve ] || bash scripts/gpu-test.sh -test.run '^$' > /dev/null 2>&1
		L=.gpu/llmserve V=.gpu/shared/vocab/ggml-vocab-llama-bpe.gguf T=${BENCH_TMP:-/tmp}/llmserve-validate
		mkdir -p "$T"
		for spec in ${MODELS:-1b/Q4_K_M 8b/Q4_K_M 8b/Q8_0 8b/F16}; do
			f="$T/${spec/\//-}.gguf"
			"$L" synth --arch llama --shape "${spec%/*}" --type "${spec#*/}" --vocab "$V" --workers "$(( $(nproc) - 2 ))" -o "$f" > /dev/null 2>&1 ||
				{ say "$spec: synth failed"; continue; }
			# flat: the f32 cache; paged: the f16 pool; q16: the quantized
			# products of every tensor-core step (decode batches too) on the
			# 16-bit tensor cores.
			for mode in ${BENCH_MODES:-flat paged q16}; do
				kv=(-ctk f32 -ctv f32) env=()
				case $mode in
				paged) kv=(-ctk f16 -ctv f16) ;;
				q16) env=(LLMSERVE_MATMUL_Q16=1) ;;
				esac
				env "${env[@]}" timeout 150 "$L" bench -m "$f" -p 512 -n 32 -B 1,16,64 -r 3 "${kv[@]}" > "$LOGDIR/bench-${spec/\//-}-$mode.txt" 2>&1
				grep -E '^(pp|tg)' "$LOGDIR/bench-${spec/\//-}-$mode.txt" | sed "s|^|$spec $mode: |" | tee -a "$summary"
			done
			timeout 100 "$L" bench -m "$f" -p 512 -n 2 -B 1 --profile > "$LOGDIR/profile-${spec/\//-}.txt" 2>&1
			rm -f "$f"
		done
		;;
	*) echo "gpu-validate: unknown phase $phase (tests, kbench, bench)" >&2; exit 2 ;;
	esac
done
