#!/usr/bin/env bash
# mk/cuda_arch.sh: the GPU architectures a CUDA build carries, chosen for the machine it is built on.
#
#   mk/cuda_arch.sh              prints the list, e.g. "sm_90 compute_90" (one line, space-separated)
#   mk/cuda_arch.sh --flags L..  prints nvcc's -gencode flags for the list L (the words printed above)
#
# The rule, in order:
#   1. CUDA_ARCH set and not "auto": its words (spaces or commas between them). sm_XY is machine code (SASS) for
#      compute capability X.Y, compute_XY is PTX for it (the driver JIT-compiles PTX for any GPU of that capability
#      or newer); "native" is rule 2, "fat" rule 3. A list with no compute_ word gets the PTX of its newest sm_ word,
#      as nvcc's -arch=sm_XY does, so CUDA_ARCH=sm_90 carries sm_90 and compute_90.
#   2. A GPU visible here (`nvidia-smi --query-gpu=compute_cap --format=csv,noheader` answers): SASS for each
#      capability listed, plus the PTX of the newest. A capability this toolkit has no SASS for (a GPU newer than
#      the toolkit) gets the toolkit's newest PTX below it, which the driver JIT-compiles there.
#   3. No GPU visible (a CI build host): the fat binary, SASS for sm_75 sm_80 sm_86 sm_89 sm_90 sm_100 sm_120 (Turing to
#      Blackwell) less those the toolkit lacks (`nvcc --list-gpu-code`), plus the PTX of the newest kept, so a GPU newer
#      than the toolkit still runs, by JIT.
# NVCC names the compiler (default: nvcc on PATH). Errors (a word that is not sm_XY/compute_XY, an architecture the
# toolkit cannot build, no nvcc) go to stderr naming CUDA_ARCH or the word, and the exit status is 1 with nothing on
# stdout; the Makefile stops on an empty list. Notes (the GPU seen, an architecture dropped) go to stderr when
# CUDA_ARCH_VERBOSE=1.
set -u
FAT="sm_75 sm_80 sm_86 sm_89 sm_90 sm_100 sm_120"
nvcc="${NVCC:-nvcc}"

note() { [ "${CUDA_ARCH_VERBOSE:-0}" = 1 ] && echo "mk/cuda_arch.sh: $*" >&2; return 0; }
die() { echo "mk/cuda_arch.sh: $*" >&2; exit 1; }

# "sm_90a" -> "90a"; the number part "90" of it
num() { local v="${1#*_}"; echo "${v%%[af]}"; }

if [ "${1:-}" = "--flags" ]; then
  shift
  out=""
  for w in $*; do
    case "$w" in
      sm_*) out="$out -gencode=arch=compute_${w#sm_},code=$w" ;;
      compute_*) out="$out -gencode=arch=$w,code=$w" ;;
      *) die "--flags: '$w' is not sm_XY or compute_XY" ;;
    esac
  done
  echo "${out# }"
  exit 0
fi

# What the toolkit can build: its SASS targets and PTX (virtual) architectures.
codes=$("$nvcc" --list-gpu-code 2>/dev/null | tr '\n' ' ') || codes=""
archs=$("$nvcc" --list-gpu-arch 2>/dev/null | tr '\n' ' ') || archs=""
[ -n "$codes" ] && [ -n "$archs" ] || die "cannot ask '$nvcc' which architectures it builds (--list-gpu-code, --list-gpu-arch); set NVCC or CUDA=0"
has() { case " $2 " in *" $1 "*) return 0 ;; esac; return 1; }

# The newest of a list of words by number ("sm_120" over "sm_90").
newest() { local best="" bn=-1 w n; for w in $*; do n=$(num "$w"); [ "$n" -gt "$bn" ] && best="$w" bn="$n"; done; echo "$best"; }

# Adds the PTX of the newest sm_ word when the list has no compute_ word.
with_ptx() {
  local l="$*" w
  for w in $l; do case "$w" in compute_*) echo "$l"; return ;; esac; done
  local top; top=$(newest $l)
  [ -n "$top" ] || { echo "$l"; return; }
  local p="compute_${top#sm_}"
  if has "$p" "$archs"; then echo "$l $p"; else echo "$l"; fi
}

fat() {
  local keep="" w
  for w in $FAT; do
    if has "$w" "$codes"; then keep="$keep $w"; else note "this toolkit has no $w: left out of the fat binary"; fi
  done
  [ -n "$keep" ] || die "this toolkit ($nvcc) builds none of $FAT"
  with_ptx $keep
}

# Rule 2: the capabilities of the GPUs nvidia-smi lists, or nothing.
native() {
  command -v nvidia-smi >/dev/null 2>&1 || return 1
  local caps; caps=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null) || return 1
  local list="" extra="" c n
  for c in $(echo "$caps" | tr -d ' \r' | sort -u); do
    case "$c" in [0-9]*.[0-9]*) ;; *) continue ;; esac
    n="${c%%.*}${c#*.}"
    if has "sm_$n" "$codes"; then
      has "sm_$n" "$list" || list="$list sm_$n"
      note "GPU of compute capability $c visible: sm_$n"
    else
      # newer than the toolkit: its newest PTX at or below this capability, JIT-compiled by the driver
      local best="" bn=-1 a an
      for a in $archs; do an=$(num "$a"); case "$a" in *[af]) continue ;; esac
        [ "$an" -le "$n" ] && [ "$an" -gt "$bn" ] && best="$a" bn="$an"; done
      if [ -n "$best" ]; then
        has "$best" "$extra" || extra="$extra $best"
        note "GPU of compute capability $c visible, no sm_$n in this toolkit: $best PTX (JIT)"
      else
        note "GPU of compute capability $c visible, older than this toolkit builds: ignored"
      fi
    fi
  done
  [ -n "$list$extra" ] || return 1
  if [ -n "$extra" ]; then echo "${list# } ${extra# }" | sed 's/^ //'; else with_ptx $list; fi
}

want="${CUDA_ARCH:-}"
want=$(echo "$want" | tr ',' ' ')
if [ -z "${want// /}" ] || [ "$want" = auto ]; then
  native || { note "no GPU visible: the fat binary"; fat; }
  exit 0
fi

list=""
for w in $want; do
  case "$w" in
    native) list="$list $(native || die "CUDA_ARCH=native: no GPU visible to nvidia-smi")" ;;
    fat) list="$list $(fat)" ;;
    sm_[0-9]*) has "$w" "$codes" || die "CUDA_ARCH: this toolkit ($nvcc) has no $w (it builds: $codes)"; list="$list $w" ;;
    compute_[0-9]*) has "$w" "$archs" || die "CUDA_ARCH: this toolkit ($nvcc) has no $w (it builds: $archs)"; list="$list $w" ;;
    *) die "CUDA_ARCH: '$w' is not sm_XY, compute_XY, native or fat (e.g. CUDA_ARCH=sm_80)" ;;
  esac
done
# each word once, in the order given
uniq=""
for w in $list; do has "$w" "$uniq" || uniq="$uniq $w"; done
with_ptx $uniq
