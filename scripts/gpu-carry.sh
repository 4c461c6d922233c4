#!/usr/bin/env bash
# Keeps a device call's working tree under the 64 MiB that travel with it.
# The tracked kernels/fatbin/*.fatbin (about 23 MiB) need not travel: the
# binaries of scripts/gpu-bundle.sh embed them. So, around the device calls:
#
#   make gpu-bundle                  # first: building needs the fat binaries
#   bash scripts/gpu-carry.sh out    # move them to .gpu-stash/ (ignored, does not travel)
#   ... the run calls (carry .gpu and .gpu-llama) ...
#   bash scripts/gpu-carry.sh in     # put them back (go build needs them)
#
#   bash scripts/gpu-carry.sh size [PATH...]
#       what would travel: tracked and untracked-not-ignored files present in
#       the tree, plus the carried PATHs; exit 1 over 64 MiB
#
# `out` and `in` refuse to overwrite a file that differs from the one they
# move; `status` says where the fat binaries are. DRY=1 prints the moves.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
STASH=${STASH:-.gpu-stash}
DRY=${DRY:-0}
LIMIT=$((64 * 1048576))
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

# tree_bytes: bytes of the files that travel (present tracked files and
# untracked files git does not ignore).
tree_bytes() {
	git ls-files -z --cached --others --exclude-standard | xargs -0 -r stat -c %s 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'
}
path_bytes() { [ -e "$1" ] && du -sb "$1" | cut -f1 || echo 0; }

# move SRC_DIR DST_DIR: moves SRC_DIR/*.fatbin to DST_DIR.
move() {
	local src=$1 dst=$2 n=0 f name
	mkdir -p "$dst" || return 1
	for f in "$src"/*.fatbin; do
		[ -e "$f" ] || continue
		name=$(basename "$f")
		if [ -e "$dst/$name" ]; then
			if cmp -s "$f" "$dst/$name"; then
				[ "$DRY" != 0 ] && echo "rm $f (same as $dst/$name)" || rm -f "$f"
				n=$((n + 1)); continue
			fi
			echo "gpu-carry: $dst/$name exists and differs from $f; not overwritten" >&2
			return 1
		fi
		if [ "$DRY" != 0 ]; then echo "mv $f $dst/"; else mv "$f" "$dst/" || return 1; fi
		n=$((n + 1))
	done
	echo "gpu-carry: $n fat binaries $src -> $dst"
}

case ${1:-status} in
out)
	move kernels/fatbin "$STASH/kernels/fatbin" || exit 1
	echo "gpu-carry: the tree now travels as $(mib "$(tree_bytes)") (put them back with: bash scripts/gpu-carry.sh in)"
	;;
in)
	[ -d "$STASH/kernels/fatbin" ] || { echo "gpu-carry: nothing stashed in $STASH"; exit 0; }
	move "$STASH/kernels/fatbin" kernels/fatbin || exit 1
	[ "$DRY" != 0 ] || rmdir -p "$STASH/kernels/fatbin" 2>/dev/null
	git diff --quiet -- kernels/fatbin || echo "gpu-carry: note: kernels/fatbin differs from the commit" >&2
	;;
size)
	shift
	t=$(tree_bytes) total=$t
	echo "tree (tracked + untracked not ignored, present): $(mib "$t")"
	for p in "$@"; do
		b=$(path_bytes "$p"); total=$((total + b))
		echo "carry $p: $(mib "$b")"
	done
	echo "travels: $(mib "$total") of 64 MiB"
	[ "$total" -le "$LIMIT" ] || { echo "gpu-carry: over 64 MiB" >&2; exit 1; }
	;;
status)
	here=$(ls kernels/fatbin/*.fatbin 2>/dev/null | wc -l)
	away=$(ls "$STASH"/kernels/fatbin/*.fatbin 2>/dev/null | wc -l)
	echo "gpu-carry: $here fat binaries in kernels/fatbin, $away in $STASH; the tree travels as $(mib "$(tree_bytes)")"
	;;
*) echo "usage: gpu-carry.sh out | in | size [PATH...] | status" >&2; exit 2 ;;
esac
