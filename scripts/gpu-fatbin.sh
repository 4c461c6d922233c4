#!/usr/bin/env bash
# Compiles kernels/*.cu into kernels/fatbin/<name>.fatbin (machine code for
# sm_80, sm_86, sm_89 and sm_90, plus compute_90 PTX for newer devices;
# compressed, the driver unpacks it at load; mmw.cu, which needs sm_90a,
# as PTX only, kernels/fatbin/mmw.ptx) and
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
rm -f kernels/fatbin/*.ptx
for src in kernels/*.cu; do
	name=$(basename "$src" .cu)
	if [ "$name" = mmw ]; then
		# wgmma (sm_90a) is newer than this toolkit: PTX only, its header
		# raised to ISA 8.0 and sm_90a; the driver compiles it at load.
		echo "nvcc -ptx $src -> kernels/fatbin/$name.ptx (ISA 8.0, sm_90a)"
		"$NVCC" -ptx -O3 -std=c++17 -arch=compute_90 -o "kernels/fatbin/$name.ptx" "$src"
		sed -i -e 's/^\.version .*/.version 8.0/' -e 's/^\.target sm_90$/.target sm_90a/' "kernels/fatbin/$name.ptx"
		grep -q '^\.target sm_90a$' "kernels/fatbin/$name.ptx" || { echo "gpu-fatbin: $name.ptx: no .target line to raise" >&2; exit 1; }
		continue
	fi
	echo "nvcc $src -> kernels/fatbin/$name.fatbin"
	"$NVCC" -fatbin "${FLAGS[@]}" -o "kernels/fatbin/$name.fatbin" "$src"
done
bash scripts/gpu-fatbin-check.sh --print > kernels/fatbin/SOURCES.sha256
echo "gpu-fatbin: wrote $(ls kernels/fatbin/*.fatbin | wc -l) fat binaries and $(ls kernels/fatbin/*.ptx | wc -l) PTX module"
