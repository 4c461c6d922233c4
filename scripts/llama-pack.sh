#!/usr/bin/env bash
# Packs a trimmed copy of llama.cpp's source for a build on the GPU machine
# (scripts/llama-build.sh) into .gpu-llama/llama.cpp.tgz (git-ignored; carry
# it with the bundle). Runs here, from a git directory of llama.cpp (the
# argument, or LLAMA_GIT, default the first /work/.mirror/ggerganov+llama.cpp*/repo);
# REV picks the commit (default HEAD; ../shared/CUDA.md's figures are of
# c392e50).
#
# Kept: the build files, ggml with its CPU and CUDA backends, src, include,
# common, pocs, and of examples only llama-bench, batched-bench and server
# (examples/CMakeLists.txt is rewritten to add those three). Left out: model
# files, docs, media, tests, the other backends, the server's web UI sources,
# themes and tests, and public/index.html.gz (llama-build.sh writes a small
# page in its place). About 3.5 MB.
#
#   bash scripts/llama-pack.sh [GIT_DIR]     DRY=1 prints what it would run
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
DRY=${DRY:-0}
REV=${REV:-HEAD}
OUTDIR=${OUTDIR:-.gpu-llama}
git_dir=${1:-${LLAMA_GIT:-}}
if [ -z "$git_dir" ]; then
	for d in /work/.mirror/ggerganov+llama.cpp*/repo; do [ -d "$d" ] && { git_dir=$d; break; }; done
fi
[ -n "$git_dir" ] && [ -d "$git_dir" ] || { echo "llama-pack: no llama.cpp git directory (give it as the argument or LLAMA_GIT)" >&2; exit 2; }
lgit() { git --git-dir="$git_dir" "$@"; }
commit=$(lgit rev-parse --short=7 "$REV^{commit}" 2>/dev/null) || { echo "llama-pack: $git_dir has no commit $REV" >&2; exit 2; }

# Paths taken from the commit, then paths removed from what they hold.
keep=(CMakeLists.txt LICENSE cmake common include src pocs scripts/xxd.cmake scripts/build-info.sh
	ggml/CMakeLists.txt ggml/cmake ggml/include ggml/.gitignore
	examples/llama-bench examples/batched-bench examples/server)
# ggml/src: its own files and the CPU and CUDA backends, no other backend.
while IFS= read -r p; do
	case $p in
	ggml/src/ggml-cpu | ggml/src/ggml-cuda) keep+=("$p") ;;
	ggml/src/ggml-*) [ "$(lgit cat-file -t "$REV:$p")" = blob ] && keep+=("$p") ;; # ggml-alloc.c and the like
	*) keep+=("$p") ;;
	esac
done < <(lgit ls-tree --name-only "$REV" ggml/src/)
drop=(examples/server/public_legacy examples/server/public_simplechat examples/server/webui
	examples/server/themes examples/server/tests examples/server/bench examples/server/public/index.html.gz
	common/stb_image.h)
examples=(batched-bench llama-bench server)

out="$OUTDIR/llama.cpp.tgz"
if [ "$DRY" != 0 ]; then
	echo "git --git-dir=$git_dir archive --prefix=llama.cpp/ $commit -- ${keep[*]}"
	echo "remove: ${drop[*]}"
	echo "rewrite llama.cpp/examples/CMakeLists.txt: add_subdirectory of ${examples[*]} only"
	echo "tar czf $out llama.cpp   # commit $commit"
	exit 0
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# A snapshot may lack the blobs of large files (models/*.gguf): git archive
# names them on stderr even when they are not asked for, so its messages
# are shown only when it fails.
lgit archive --format=tar --prefix=llama.cpp/ "$commit" -- "${keep[@]}" 2> "$tmp/archive.err" | tar xf - -C "$tmp" ||
	{ cat "$tmp/archive.err" >&2; echo "llama-pack: git archive of $commit failed" >&2; exit 1; }
for p in "${drop[@]}"; do rm -rf "${tmp:?}/llama.cpp/$p"; done
# examples/CMakeLists.txt adds ~40 example folders; keep its preamble and
# add only the three kept, so that cmake configures without the others.
ex="$tmp/llama.cpp/examples/CMakeLists.txt"
lgit show "$commit:examples/CMakeLists.txt" > "$ex.orig" || exit 1
{
	sed -n '1,/^# examples/p' "$ex.orig"
	echo
	echo "include_directories(\${CMAKE_CURRENT_SOURCE_DIR})"
	echo "# trimmed by llmserve's scripts/llama-pack.sh: only what the benchmarks need"
	for e in "${examples[@]}"; do
		if [ "$e" = server ]; then
			printf 'if (LLAMA_BUILD_SERVER)\n    add_subdirectory(server)\nendif()\n'
		else
			echo "add_subdirectory($e)"
		fi
	done
} > "$ex"
rm -f "$ex.orig"
grep -q 'add_subdirectory(llama-bench)' "$ex" || { echo "llama-pack: examples/CMakeLists.txt rewrite failed" >&2; exit 1; }
echo "$commit" > "$tmp/llama.cpp/LLAMA_COMMIT"
mkdir -p "$OUTDIR" || exit 1
tar czf "$out.part" -C "$tmp" llama.cpp && mv "$out.part" "$out" || { echo "llama-pack: tar failed" >&2; exit 1; }
files=$(tar tzf "$out" | grep -vc '/$')
echo "llama-pack: $out, llama.cpp $commit, $files files, $(( $(stat -c %s "$out") / 1024 )) KiB"
