#!/usr/bin/env bash
# One device call that checks a change to the architectures' GPU paths,
# from a bundle of scripts/gpu-bundle.sh (carry .gpu): it synthesizes
# Q4_K_M models (default, smallest first: Llama-3.2-1B, Phi-3.5-mini,
# Llama-3.1-8B, Gemma-2-9B and Mixtral-8x7B shapes; CHECK_MODELS="arch:shape
# ...") into MODELS (default
# /opt/models) in the background while the CUDA tests run (RUN_decode,
# RUN_kernels: -test.run patterns, default every decode test and the
# kernels of the architectures' ops), then, as each model is written,
# `llmserve bench -p 512 -n 128 -B 1 -r 2` and the profile of one decode
# step and one 512-token prompt step; for Llama-3.1-8B also decode batches
# of 16 and 64 (with CHECK_Q16=1 also on the 16-bit tensor-core products,
# LLMSERVE_MATMUL_Q16=1), the profile of a 64-token step and, with
# CHECK_DEPTH=1, decode after an 8000-token prompt on the f32 cache and the
# paged f16 pool; for
# Mixtral-8x7B also the prompt with every expert over every row
# (LLMSERVE_MOE_GROUPED=0; grouped by expert is the default) and a decode
# batch of 16; with CHECK_VECMIN="0 64", Llama-3.1-8B's batches of 16 and
# 64 after 128 tokens by default and under each LLMSERVE_ATTENTION_VEC_MIN
# (0: the decode attention that writes every split);
# with CHECK_PREVIEW=1, gemma2, phi3 and Mixtral also under
# LLMSERVE_GPU_PREVIEW=1. Everything
# goes to LOGDIR (default /tmp/gpu-check), packed into PACK (default
# $OUT/gpu-check.tgz, or .gpu/gpu-check.tgz) after every step, so that a
# call stopped at its limit still brings them back; the summary (test
# counts, pp/tg lines) is printed. CHECK_BUDGET (s, default 380) bounds the
# whole call: models not written by then are skipped and said so.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
t0=$(date +%s)
LOGDIR=${LOGDIR:-/tmp/gpu-check}
PACK=${PACK:-${OUT:-.gpu}/gpu-check.tgz}
MODELS=${MODELS:-/opt/models}
BUDGET=${CHECK_BUDGET:-380}
mkdir -p "$LOGDIR" "$MODELS"
left() { echo $(( BUDGET - ($(date +%s) - t0) )); }
pack() { tar czf "$PACK" -C "$(dirname "$LOGDIR")" "$(basename "$LOGDIR")" 2>/dev/null; }
bash scripts/gpu-test.sh -test.run '^$' > "$LOGDIR/unpack.txt" 2>&1 # unpacks the bundle
L=$PWD/.gpu/llmserve V=$PWD/.gpu/shared/vocab/ggml-vocab-llama-bpe.gguf
# Smallest first: beside the tests a synthesis writes ~50-100 MB/s, so
# Mixtral-8x7B's 26 GB take minutes and fit a call only when it has them
# (on 2026-12-02, written first, it blocked every other model of the call).
specs=${CHECK_MODELS:-llama:1b phi3:mini llama:8b gemma2:9b mixtral:8x7b}
(
	for s in $specs; do
		f="$MODELS/${s/:/-}.gguf"
		[ -f "$f.ok" ] || { timeout 400 "$L" synth --arch "${s%:*}" --shape "${s#*:}" --type Q4_K_M --vocab "$V" --workers "$(( $(nproc) - 4 ))" -o "$f" > "$LOGDIR/synth-${s/:/-}.txt" 2>&1 && touch "$f.ok"; }
		echo "$s $(( $(date +%s) - t0 )) s" >> "$LOGDIR/synth-done.txt"
	done
) &
synth=$!
RUN_kernels=${RUN_kernels:-MoE|MatVecFused|RMSNorm|Fatbin|GLU|Elementwise|Rope|ScaleSoftCap} RUN_internal_nccl='^$' LOGDIR="$LOGDIR/tests" \
	timeout "$(( $(left) - 120 ))" bash scripts/gpu-test.sh > "$LOGDIR/tests.txt" 2>&1
grep -E 'passed|--- FAIL' "$LOGDIR/tests.txt" | head -30
pack
for s in $specs; do
	f="$MODELS/${s/:/-}.gguf" log="$LOGDIR/bench-${s/:/-}.txt"
	while [ ! -f "$f.ok" ] && kill -0 "$synth" 2>/dev/null && [ "$(left)" -gt 40 ]; do sleep 2; done
	[ -f "$f.ok" ] || { echo "$s: not synthesized within the budget"; continue; }
	[ "$(left)" -gt 30 ] || { echo "$s: skipped, the budget is spent"; continue; }
	timeout "$(( $(left) - 10 ))" "$L" bench -m "$f" -p 512 -n 128 -B 1 -r 2 > "$log" 2>&1
	grep -E '^(pp|tg)' "$log" | sed "s|^|$s: |"
	[ "$(left)" -gt 40 ] && timeout 30 "$L" bench -m "$f" -p 512 -n 2 -B 1 --profile > "$LOGDIR/profile-${s/:/-}.txt" 2>&1
	if [ "$s" = llama:8b ] && [ "$(left)" -gt 60 ]; then
		for q in default ${CHECK_Q16:+1}; do
			LLMSERVE_MATMUL_Q16=$([ $q = 1 ] && echo 1) timeout 40 "$L" bench -m "$f" -p 64 -n 32 -B 16,64 > "$log.q16-$q" 2>&1
			grep -E '^(pp|tg)' "$log.q16-$q" | sed "s|^|$s q16=$q: |"
		done
		timeout 30 "$L" bench -m "$f" -p 64 -n 2 -B 1 --profile > "$LOGDIR/profile64-${s/:/-}.txt" 2>&1
		# With CHECK_VECMIN="N ...", decode batches after a 128-token prompt
		# (as bench-gpu.sh's), at the context of the run and at a server's
		# 4096 (64 splits), by default and at each minimum split length N
		# of attention_vec_pf16's _used twins (LLMSERVE_ATTENTION_VEC_MIN;
		# 0: the kernels that write every split).
		for c in 256 4096; do
			for m in ${CHECK_VECMIN:+default $CHECK_VECMIN}; do
				[ "$(left)" -gt 40 ] || break
				LLMSERVE_ATTENTION_VEC_MIN=$([ "$m" = default ] || echo "$m") timeout 40 "$L" bench -m "$f" -p 128 -n 128 -B 16,64 -c $c > "$log.vecmin-$m-c$c" 2>&1
				grep -E '^tg' "$log.vecmin-$m-c$c" | sed "s|^|$s -c $c vec min $m: |"
			done
		done
		for kv in ${CHECK_DEPTH:+flat f16}; do # decode at depth 8000: the f32 cache, the paged f16 pool
			[ "$(left)" -gt 30 ] || break
			timeout 40 "$L" bench -m "$f" -p 8000 -n 32 -B 1 -ctk $([ $kv = f16 ] && echo f16 || echo f32) -ctv $([ $kv = f16 ] && echo f16 || echo f32) > "$log.d8000-$kv" 2>&1
			grep -E '^(pp|tg)' "$log.d8000-$kv" | sed "s|^|$s depth 8000 $kv: |"
		done
	fi
	case "$s" in gemma2:* | phi3:* | mixtral:*)
		# With CHECK_PREVIEW=1, the same under LLMSERVE_GPU_PREVIEW=1
		# (whatever it gates at the time: beside the default, it shows
		# what a gated path would change).
		if [ -n "${CHECK_PREVIEW:-}" ] && [ "$(left)" -gt 40 ]; then
			LLMSERVE_GPU_PREVIEW=1 timeout "$(( $(left) - 10 ))" "$L" bench -m "$f" -p 512 -n 128 -B 1 -r 2 > "$log.preview" 2>&1
			grep -E '^(pp|tg)' "$log.preview" | sed "s|^|$s preview: |"
			[ "$(left)" -gt 40 ] && LLMSERVE_GPU_PREVIEW=1 timeout 30 "$L" bench -m "$f" -p 512 -n 2 -B 1 --profile > "$LOGDIR/profile-preview-${s/:/-}.txt" 2>&1
		fi
		;;
	esac
	if [ "$s" = mixtral:8x7b ] && [ "$(left)" -gt 50 ]; then
		# Prompt steps with every expert over every row, and a batch of 16.
		LLMSERVE_MOE_GROUPED=0 timeout 40 "$L" bench -m "$f" -p 512 -n 16 -B 1 -r 2 > "$log.dense" 2>&1
		grep -E '^(pp|tg)' "$log.dense" | sed "s|^|$s dense: |"
		[ "$(left)" -gt 30 ] && timeout 40 "$L" bench -m "$f" -p 64 -n 32 -B 16 > "$log.b16" 2>&1
		grep -E '^tg' "$log.b16" | sed "s|^|$s: |"
	fi
	pack
done
kill "$synth" 2>/dev/null
echo "gpu-check: done in $(( $(date +%s) - t0 )) s"
pack
