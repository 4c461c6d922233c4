#!/usr/bin/env bash
# Compiles kernels/*.cu into kernels/fatbin/<name>.fatbin (machine code for
# sm_80, sm_86, sm_89 and sm_90, plus compute_90 PTX for newer devices;
# compressed, the driver unpacks it at load) and
# records the hash of the sources in kernels/fatbin/SOURCES.sha256, which
# scripts/gpu-fatbin-check.sh compares against. Needs nvcc
# (../shared/tools/install-cuda-toolkit.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
NVCC=${NVCC:-nvcc}
command -v "$NVCC" >/dev/null || { echo "gpu-fatbin: $NVCC not found (run ../shared/tools/install-cuda-toolkit.sh)" >&2; exit 1; }
FLAGS=(-O3 -std=c++17 -Xfatbin -compress-all
	-gencode arch=compute_80,code=sm_80
	-gencode arch=compute_86,code=sm_86
	-gencode arch=compute_89,code=sm_89
	-gencode arch=compute_90,code=sm_90
	-gencode arch=compute_90,code=compute_90)
mkdir -p kernels/fatbin
rm -f kernels/fatbin/*.fatbin
for src in kernels/*.cu; do
	name=$(basename "$src" .cu)
	echo "nvcc $src -> kernels/fatbin/$name.fatbin"
	"$NVCC" -fatbin "${FLAGS[@]}" -o "kernels/fatbin/$name.fatbin" "$src"
done
bash scripts/gpu-fatbin-check.sh --print > kernels/fatbin/SOURCES.sha256
echo "gpu-fatbin: wrote $(ls kernels/fatbin/*.fatbin | wc -l) fat binaries"
