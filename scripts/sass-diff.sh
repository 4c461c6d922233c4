#!/usr/bin/env bash
# sass-diff.sh OLD.fatbin NEW.fatbin [kernel...]: compares the machine code
# of kernels in two fat binaries, for proving that a refactor of a .cu file
# changes nothing without running it.
#
# For every architecture in SASS_ARCHS (default "sm_80 sm_90") and every
# kernel named (default: every kernel either file holds for that
# architecture), it compares
#   - the kernel's SASS (cuobjdump -sass -fun), with the /*0123*/ offsets
#     and the /* 0x... */ encoding comments stripped and white space
#     folded, so that two listings of the same instructions in the same
#     order compare equal (branch targets, constants and registers still
#     count); with SASS_EXACT=1 the encodings (and so the scheduling
#     control bits) are kept as well;
#   - its resources (cuobjdump -res-usage: registers, stack, shared,
#     local and constant memory).
# It prints one line per kernel and architecture, `identical` or `differs`
# (followed by the first lines of the diff), or `missing` when only one
# file has the kernel, and exits 1 when any kernel is not identical. Needs
# cuobjdump (the CUDA toolkit's; ../shared/tools/install-cuda-toolkit.sh).
#
# Example, before and after changing kernels/attention.cu:
#   git show HEAD~1:kernels/fatbin/attention.fatbin > /tmp/old.fatbin
#   scripts/sass-diff.sh /tmp/old.fatbin kernels/fatbin/attention.fatbin
set -euo pipefail
if [ $# -lt 2 ]; then
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
fi
old=$1 new=$2
shift 2
command -v cuobjdump >/dev/null || { echo "sass-diff: cuobjdump not found" >&2; exit 2; }
for f in "$old" "$new"; do [ -f "$f" ] || { echo "sass-diff: no file $f" >&2; exit 2; }; done
archs=${SASS_ARCHS:-sm_80 sm_90}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# kernels FILE ARCH: the names of the kernels FILE holds for ARCH.
kernels() { cuobjdump -sass -arch "$2" "$1" | sed -n 's/^[[:space:]]*Function : //p'; }

# sass FILE ARCH NAME: NAME's instructions, normalized.
sass() {
	local strip='s#/\* 0x[0-9a-f]\{16\} \*/##g'
	[ "${SASS_EXACT:-0}" = 1 ] && strip='s#^##'
	cuobjdump -sass -arch "$2" -fun "$3" "$1" |
		sed -n '/^[[:space:]]*Function : /,$p' |
		sed -e 's#/\*[0-9a-f]\{4,\}\*/##' -e "$strip" -e 's/[[:space:]]\+/ /g' -e 's/^ //; s/ $//' |
		grep -v '^$' || true
}

# res FILE ARCH NAME: NAME's resource line.
res() { cuobjdump -res-usage -arch "$2" "$1" | grep -A1 -x "[[:space:]]*Function $3:" | tail -n +2 | sed 's/^[[:space:]]*//'; }

bad=0
for arch in $archs; do
	if [ $# -gt 0 ]; then
		names=("$@")
	else
		mapfile -t names < <( (kernels "$old" "$arch"; kernels "$new" "$arch") | sort -u)
	fi
	[ ${#names[@]} -gt 0 ] || { echo "sass-diff: no kernels for $arch in $old or $new" >&2; bad=1; continue; }
	for k in "${names[@]}"; do
		sass "$old" "$arch" "$k" > "$tmp/old"
		sass "$new" "$arch" "$k" > "$tmp/new"
		if [ ! -s "$tmp/old" ] || [ ! -s "$tmp/new" ]; then
			echo "$arch $k: missing in $([ -s "$tmp/old" ] && echo "$new" || echo "$old")"
			bad=1
			continue
		fi
		n=$(grep -c . "$tmp/old")
		ro=$(res "$old" "$arch" "$k") rn=$(res "$new" "$arch" "$k")
		if cmp -s "$tmp/old" "$tmp/new" && [ "$ro" = "$rn" ]; then
			echo "$arch $k: identical ($n lines; $rn)"
		else
			echo "$arch $k: differs (old $n lines, $ro; new $(grep -c . "$tmp/new") lines, $rn)"
			diff "$tmp/old" "$tmp/new" > "$tmp/diff" || true
			head -20 "$tmp/diff" | sed 's/^/    /'
			bad=1
		fi
	done
done
exit $bad
