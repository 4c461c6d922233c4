#!/usr/bin/env bash
# Builds everything a GPU machine without Go needs into .gpu/ (git-ignored),
# small enough to travel beside the working tree (64 MiB together on the
# device tool): the cuda-tagged test binaries of every package that has CUDA
# tests, the llmserve binary and the grammar benchmarks (grammar.bench, for
# scripts/gpu-targets.sh), xz-compressed, and the shared test data the
# GPU tests read (golden, golden-arch, stories260K, the llama-bpe vocabulary)
# as .gpu/shared.txz. On the GPU machine, scripts/gpu-test.sh and
# scripts/bench-gpu.sh unpack them. Run from the repository; needs Go, xz
# and ../shared (or SHARED=DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${SHARED:-../shared}
[ -d "$SHARED/golden" ] || { echo "gpu-bundle: no shared data at $SHARED" >&2; exit 1; }
command -v xz >/dev/null || { echo "gpu-bundle: xz not found" >&2; exit 1; }
rm -rf .gpu
mkdir -p .gpu/shared/models .gpu/shared/vocab
out=$PWD/.gpu
# The binaries embed kernels/fatbin whole (sm_80 to sm_90 and PTX, ~36 MB,
# three times over). The device is an H100/H200, so with BUNDLE_ARCH
# (default sm_90; empty: the whole fat binaries) they are built from a
# copy of the tree whose fat binaries hold that architecture's machine
# code alone, extracted from the committed ones (cuobjdump -xelf, then
# fatbinary): the same code the full binaries run there, a fifth the size.
ARCH=${BUNDLE_ARCH-sm_90}
src=$PWD
if [ -n "$ARCH" ] && command -v cuobjdump >/dev/null && command -v fatbinary >/dev/null; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	git ls-files -z --cached --others --exclude-standard | xargs -0 -r cp --parents -t "$tmp" 2>/dev/null || true # a deleted file is skipped
	for f in kernels/fatbin/*.fatbin; do
		x=$tmp/xelf/$(basename "$f" .fatbin)
		mkdir -p "$x"
		(cd "$x" && cuobjdump -xelf all "$src/$f" >/dev/null)
		cubin=$(ls "$x"/*."$ARCH".cubin 2>/dev/null | head -1)
		[ -n "$cubin" ] || { echo "gpu-bundle: $f has no $ARCH code" >&2; exit 1; }
		fatbinary -64 --create="$tmp/$f" --image=profile="$ARCH",file="$cubin" -compress-all
	done
	rm -rf "$tmp/xelf"
	src=$tmp
	echo "gpu-bundle: fat binaries of $ARCH alone ($(du -sb "$tmp/kernels/fatbin" | cut -f1) bytes with the PTX modules)"
fi
cd "$src"
for pkg in $(go list -tags cuda -f '{{if .TestGoFiles}}{{.ImportPath}}{{end}}' ./...); do
	dir=${pkg#llmserve/}
	if ls "$dir"/*_cuda_test.go >/dev/null 2>&1; then
		name=$(echo "$dir" | tr / _)
		echo "gpu-bundle: $pkg -> .gpu/$name.test"
		go test -c -tags cuda -ldflags='-s -w' -o "$out/$name.test" "./$dir"
	fi
done
go build -tags cuda -ldflags='-s -w' -o "$out/llmserve" ./cmd/llmserve
# The grammar benchmarks (issue 17's compile and mask times) for
# scripts/gpu-targets.sh: named .bench so that gpu-test.sh does not run
# the package's tests there.
go test -c -ldflags='-s -w' -o "$out/grammar.bench" ./grammar
cd "$(dirname "$out")"
cp -r "$SHARED/golden" "$SHARED/golden-arch" .gpu/shared/
cp "$SHARED"/models/stories260K* .gpu/shared/models/
cp "$SHARED/vocab/ggml-vocab-llama-bpe.gguf" .gpu/shared/vocab/
(cd .gpu && tar cJf shared.txz shared && rm -rf shared)
xz -T0 -6 -f .gpu/*.test .gpu/*.bench .gpu/llmserve
# What travels beside .gpu: the tree without kernels/fatbin/*.fatbin (the
# binaries embed them; `scripts/gpu-carry.sh out` moves them aside for the
# device calls) and .gpu-llama when scripts/llama-pack.sh made it.
tree=$(git ls-files -z --cached --others --exclude-standard | grep -zv '^kernels/fatbin/.*\.fatbin$' |
	xargs -0 -r stat -c %s 2>/dev/null | awk '{ s += $1 } END { print s + 0 }') || true # a deleted file is skipped
bundle=$(du -sb .gpu | cut -f1)
llama=0
[ -d .gpu-llama ] && llama=$(du -sb .gpu-llama | cut -f1)
echo "gpu-bundle: .gpu is $((bundle / 1048576)) MiB, .gpu-llama $((llama / 1048576)) MiB, the tree without kernels/fatbin/*.fatbin $((tree / 1048576)) MiB (64 MiB travel together; move the fat binaries out first: bash scripts/gpu-carry.sh out)"
[ $((bundle + llama + tree)) -le $((64 * 1048576)) ] || { echo "gpu-bundle: over 64 MiB" >&2; exit 1; }
