#!/usr/bin/env bash
# Runs llmserve's CUDA tests. Where Go is installed it first builds the
# cuda-tagged test binaries of every package that has them into .gpu/
# (stripped; gzip them to copy them, this script unpacks .gpu/*.test.gz);
# where a GPU is present it runs every .gpu/*.test binary, writing each
# one's full log under LOGDIR (default .gpu/logs), and ends with one line
# `N passed, N failed` counting test functions (subtests included).
# Extra arguments go to every test binary (e.g. -test.run X); RUN_<name>
# (name: the binary's, e.g. RUN_kernels, RUN_internal_nccl) gives one binary
# a -test.run pattern of its own ('^$' runs none of its tests).
set -uo pipefail
cd "$(dirname "$0")/.."
LOGDIR=${LOGDIR:-.gpu/logs}
mkdir -p .gpu "$LOGDIR"
if command -v go >/dev/null; then
	for pkg in $(go list -tags cuda -f '{{if .TestGoFiles}}{{.ImportPath}}{{end}}' ./... ); do
		dir=${pkg#llmserve/}
		if ls "$dir"/*_cuda_test.go >/dev/null 2>&1; then
			name=$(echo "$dir" | tr / _)
			echo "build $pkg -> .gpu/$name.test"
			go test -c -tags cuda -ldflags='-s -w' -o ".gpu/$name.test" "./$dir" || exit 1
		fi
	done
fi
if ! nvidia-smi -L >/dev/null 2>&1; then
	echo "gpu-test: no GPU here; test binaries are in .gpu/ (run this script where the GPU is)"
	exit 0
fi
for gz in .gpu/*.test.gz; do
	[ -e "$gz" ] || continue
	gunzip -f "$gz" && chmod +x "${gz%.gz}" || exit 1
done
# A bundle from scripts/gpu-bundle.sh: xz-compressed binaries and the shared
# data (python3's lzma where xz is missing).
unxz_py() { python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$1"; }
for x in .gpu/*.test.xz .gpu/llmserve.xz; do
	[ -e "$x" ] || continue
	{ xz -d -f "$x" 2>/dev/null || { unxz_py "$x" && rm -f "$x"; }; } && chmod +x "${x%.xz}" || exit 1
done
if [ -e .gpu/shared.txz ]; then
	(cd .gpu && { tar xJf shared.txz 2>/dev/null || python3 -c "import tarfile; tarfile.open('shared.txz').extractall()"; }) || exit 1
	export LLMSERVE_SHARED=${LLMSERVE_SHARED:-$PWD/.gpu/shared}
fi
pass=0 fail=0
for bin in .gpu/*.test; do
	[ -x "$bin" ] || continue
	name=$(basename "$bin" .test)
	log="$LOGDIR/$name.log"
	dir=$(echo "$name" | tr _ /)
	[ -d "$dir" ] || dir=.
	# A GPU is here, so a device that does not open is a failure, not a skip.
	run=()
	var="RUN_$name"
	[ -n "${!var:-}" ] && run=(-test.run "${!var}")
	( cd "$dir" && LLMSERVE_CUDA_REQUIRED=1 "$OLDPWD/$bin" -test.v -test.count=1 "${run[@]}" "$@" ) > "$log" 2>&1
	rc=$?
	p=$(grep -c -- '--- PASS' "$log")
	f=$(grep -c -- '--- FAIL' "$log")
	if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "$name: exit $rc without a failing test (crash?)"; tail -5 "$log"; fi
	echo "$name: $p passed, $f failed"
	grep -E -- '--- FAIL|^\s+\S+_test.go:[0-9]+' "$log" | head -40
	pass=$((pass + p)) fail=$((fail + f))
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
