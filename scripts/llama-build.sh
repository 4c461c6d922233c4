#!/usr/bin/env bash
# Builds llama.cpp's llama-bench, llama-batched-bench and llama-server ON THE
# GPU MACHINE from the tarball of scripts/llama-pack.sh (.gpu-llama/llama.cpp.tgz,
# carried with the working tree), for side-by-side figures on the same files.
# The source is unpacked to LLAMA_DIR (default /opt/llama.cpp, outside the
# copied tree, so it survives between calls while the machine stays warm)
# and built in the background (setsid), logging to LLAMA_LOG (default
# /opt/llama-build.log); the build's exit status lands in
# LLAMA_DIR/build.rc. A build of the same tarball that finished is not
# started again.
#
#   bash scripts/llama-build.sh            start the build (returns at once)
#   bash scripts/llama-build.sh --wait [S] start it if needed, wait up to S seconds
#                                          (default 540), print the log's tail;
#                                          exit 0 when the programs (LLAMA_BINS) are built
#   bash scripts/llama-build.sh --status   say where it stands (exit 0: built)
#   bash scripts/llama-build.sh --configure  run only cmake's configure, in the
#                                          foreground (a check where no GPU is)
# DRY=1 prints the commands instead of running them. JOBS (default: cores - 2,
# at least 1) is the build's parallelism; LLAMA_BINS (default "llama-bench
# llama-batched-bench llama-server") the programs built.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
TGZ=${LLAMA_TGZ:-$root/.gpu-llama/llama.cpp.tgz}
DIR=${LLAMA_DIR:-/opt/llama.cpp}
LOG=${LLAMA_LOG:-/opt/llama-build.log}
DRY=${DRY:-0}
cores=$(nproc 2>/dev/null || echo 4)
JOBS=${JOBS:-$(( cores > 3 ? cores - 2 : 1 ))}
mode=${1:-start}
wait_s=${2:-540}
# shellcheck disable=SC2206
bins=(${LLAMA_BINS:-llama-bench llama-batched-bench llama-server})
CMAKE_ARGS=(-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release)

built() { for b in "${bins[@]}"; do [ -x "$DIR/build/bin/$b" ] || return 1; done; }
stamp() { sha256sum "$TGZ" | cut -c1-16; }
running() { [ ! -f "$DIR/build.rc" ] && [ -s "$DIR.pid" ] && kill -0 "$(cat "$DIR.pid")" 2>/dev/null; }

# unpack: a fresh source tree from the tarball, unless the same one is there.
# llama-server embeds public/index.html.gz and public/loading.html: the
# tarball leaves the 1.2 MB web page out, so a small page takes its place.
unpack() {
	[ -f "$TGZ" ] || { echo "llama-build: no $TGZ (run scripts/llama-pack.sh here and carry .gpu-llama)" >&2; return 1; }
	if [ -f "$DIR/.stamp" ] && [ "$(cat "$DIR/.stamp")" = "$(stamp)" ]; then return 0; fi
	rm -rf "$DIR" && mkdir -p "$(dirname "$DIR")" || return 1
	tar xzf "$TGZ" -C "$(dirname "$DIR")" || return 1
	[ "$(dirname "$DIR")/llama.cpp" = "$DIR" ] || mv "$(dirname "$DIR")/llama.cpp" "$DIR" || return 1
	local pub="$DIR/examples/server/public"
	mkdir -p "$pub"
	[ -s "$pub/index.html.gz" ] || printf '<!doctype html><title>llama-server</title><p>web page left out of this build\n' | gzip -9 > "$pub/index.html.gz"
	[ -e "$pub/loading.html" ] || : > "$pub/loading.html"
	stamp > "$DIR/.stamp"
}

build_cmd() {
	echo "cd $DIR && cmake -B build ${CMAKE_ARGS[*]} && cmake --build build -j $JOBS --target ${bins[*]}"
}

start() {
	if built && [ -f "$DIR/.stamp" ] && [ -f "$TGZ" ] && [ "$(cat "$DIR/.stamp")" = "$(stamp)" ]; then
		echo "llama-build: already built in $DIR/build/bin"; return 0
	fi
	if running; then echo "llama-build: already running (pid $(cat "$DIR.pid")), log $LOG"; return 0; fi
	if [ "$DRY" != 0 ]; then
		echo "unpack $TGZ -> $DIR (index.html.gz and loading.html written when absent)"
		echo "setsid bash -c '$(build_cmd)' > $LOG 2>&1; exit status -> $DIR/build.rc"
		return 0
	fi
	command -v cmake >/dev/null || { echo "llama-build: cmake not found" >&2; return 1; }
	unpack || return 1
	rm -f "$DIR/build.rc"
	# The build's own shell writes its pid, whether or not setsid forks.
	rm -f "$DIR.pid"
	setsid bash -c "echo \$\$ > '$DIR.pid'; start=\$(date +%s); { $(build_cmd); } > '$LOG' 2>&1 < /dev/null; rc=\$?;
		echo \"llama-build: exit \$rc after \$(( \$(date +%s) - start )) s\" >> '$LOG'; echo \$rc > '$DIR/build.rc'" < /dev/null > /dev/null 2>&1 &
	for _ in 1 2 3 4 5 6 7 8 9 10; do [ -s "$DIR.pid" ] && break; sleep 0.2; done
	echo "llama-build: started (pid $(cat "$DIR.pid" 2>/dev/null), $JOBS jobs), log $LOG"
}

status() {
	if built && [ "$(cat "$DIR/build.rc" 2>/dev/null)" = 0 ]; then echo "llama-build: built: ${bins[*]} in $DIR/build/bin"; return 0; fi
	if running; then echo "llama-build: running, $(grep -c '\[' "$LOG" 2>/dev/null) progress lines so far (log $LOG)"; return 3; fi
	if [ -f "$DIR/build.rc" ]; then echo "llama-build: failed (exit $(cat "$DIR/build.rc")); log $LOG:"; tail -20 "$LOG"; return 1; fi
	echo "llama-build: not started"; return 2
}

case $mode in
start) start ;;
--wait)
	start || exit 1
	[ "$DRY" != 0 ] && { echo "wait up to ${wait_s}s for $DIR/build.rc"; exit 0; }
	t0=$(date +%s)
	while running && [ $(( $(date +%s) - t0 )) -lt "$wait_s" ]; do sleep 5; done
	status; rc=$?
	[ $rc -eq 3 ] && echo "llama-build: still running after ${wait_s}s"
	tail -3 "$LOG" 2>/dev/null
	exit $rc
	;;
--status) status ;;
--configure)
	if [ "$DRY" != 0 ]; then echo "unpack $TGZ -> $DIR; cd $DIR && cmake -B build ${CMAKE_ARGS[*]}"; exit 0; fi
	unpack && (cd "$DIR" && cmake -B build "${CMAKE_ARGS[@]}")
	;;
*) echo "usage: llama-build.sh [--wait [SECONDS] | --status | --configure]" >&2; exit 2 ;;
esac
