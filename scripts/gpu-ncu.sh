#!/usr/bin/env bash
# Profiles one kernel of a kernels benchmark with Nsight Compute on the GPU
# machine (Firecracker runtimes read the hardware counters; the clocks are
# left alone, --clock-control none), from the kernels test binary of a
# bundle (.gpu/kernels.test or .gpu/kernels.test.xz, scripts/gpu-bundle.sh).
# It writes the report (KERNEL.ncu-rep) and its details page as text under
# OUTDIR (default $OUT, else .gpu/ncu) and prints the lines that say where
# the time goes: the throughputs against their peaks, the tensor pipe's
# activity, the warps per scheduler and the main stall reasons.
#
#   bash scripts/gpu-ncu.sh KERNEL_REGEX BENCH_PATTERN
#
# e.g. the 16-bit prompt product of Llama-3.1-8B's FFN down projection:
#   bash scripts/gpu-ncu.sh mmh_f16_128x128_64x64_k64s3 \
#     'GPUMatMulHalf/^F16$/512x4096x14336/mmh128x128_64x64_k64s3$'
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
[ $# -eq 2 ] || { echo "usage: gpu-ncu.sh KERNEL_REGEX BENCH_PATTERN" >&2; exit 2; }
kernel=$1 bench=$2
OUTDIR=${OUTDIR:-${OUT:-.gpu/ncu}}
mkdir -p "$OUTDIR" && OUTDIR=$(cd "$OUTDIR" && pwd) || exit 1
bin=.gpu/kernels.test
if [ ! -x "$bin" ] && [ -f "$bin.xz" ]; then
	xz -dc "$bin.xz" > "$bin" && chmod +x "$bin" || exit 1
fi
[ -x "$bin" ] || { echo "gpu-ncu: no $bin (build the bundle: scripts/gpu-bundle.sh)" >&2; exit 1; }
command -v ncu >/dev/null || { echo "gpu-ncu: ncu is not on this machine" >&2; exit 1; }
name=$(echo "$kernel" | tr -c 'A-Za-z0-9_\n' _)
bin=$PWD/$bin
# The benchmark binary runs from its package directory, as go test does.
(cd kernels && LLMSERVE_CUDA_REQUIRED=1 ncu --clock-control none --set full --kernel-name "regex:$kernel" \
	--launch-skip 2 --launch-count 1 -f -o "$OUTDIR/$name" \
	"$bin" -test.run '^$' -test.bench "$bench" -test.benchtime 5x) > "$OUTDIR/$name.log" 2>&1 ||
	{ tail -20 "$OUTDIR/$name.log"; exit 1; }
ncu --import "$OUTDIR/$name.ncu-rep" --page details > "$OUTDIR/$name.txt" 2>&1
grep -E 'Duration|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|L1/TEX Hit|L2 Hit|Registers Per|Achieved Occupancy|Theoretical Occupancy|Warp Cycles Per Issued|Issued Warp Per|No Eligible|Active Warps Per|Eligible Warps|Tensor|Stall|Bank' "$OUTDIR/$name.txt" | head -60
