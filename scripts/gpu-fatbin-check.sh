#!/usr/bin/env bash
# Fails when the committed fat binaries in kernels/fatbin are stale: the hash
# of kernels/*.cu, kernels/*.cuh and the build script, as recorded by
# scripts/gpu-fatbin.sh in kernels/fatbin/SOURCES.sha256, must match the
# sources now. Needs no CUDA toolkit. With --print, prints the hash.
set -euo pipefail
cd "$(dirname "$0")/.."
hash=$(cat kernels/*.cu kernels/*.cuh scripts/gpu-fatbin.sh | sha256sum | cut -d' ' -f1)
if [ "${1:-}" = "--print" ]; then echo "$hash"; exit 0; fi
want=$(cat kernels/fatbin/SOURCES.sha256 2>/dev/null || echo none)
for src in kernels/*.cu; do
	n=kernels/fatbin/$(basename "$src" .cu)
	[ -f "$n.fatbin" ] || [ -f "$n.ptx" ] || { echo "gpu-fatbin-check: no fat binary for $src: run make kernels" >&2; exit 1; }
done
if [ "$hash" != "$want" ]; then
	echo "gpu-fatbin-check: kernels/fatbin is stale (sources $hash, built from $want): run make kernels" >&2
	exit 1
fi
echo "gpu-fatbin-check: kernels/fatbin matches the sources"
