# tools/gpu/gpu_util.sh: sourced by the scaling scripts: every GPU's utilisation sampled every 0.5 s while a run goes on.
#   gpu_util_start FILE   starts the sampler (nothing when nvidia-smi is missing: then FILE stays empty)
#   gpu_util_stop         stops it
#   gpu_util_mean FILE K  "0:88% 1:74%": each of GPUs 0..K-1's mean over the samples in FILE
#   gpu_count             the GPUs nvidia-smi lists (0 without it)
gpu_util_start() {
    : >"$1"
    gpu_util_pid=""
    command -v nvidia-smi >/dev/null || return 0
    nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits -lms 500 >"$1" 2>/dev/null &
    gpu_util_pid=$!
}
gpu_util_stop() {
    [ -n "${gpu_util_pid:-}" ] || return 0
    kill "$gpu_util_pid" 2>/dev/null || true
    wait "$gpu_util_pid" 2>/dev/null || true
    gpu_util_pid=""
}
gpu_util_mean() {
    awk -F', *' -v k="$2" '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9.]+$/ && $1 < k { s[$1] += $2; n[$1]++ }
        END { for (g = 0; g < k; g++) if (n[g]) printf "%s%d:%.0f%%", (o++ ? " " : ""), g, s[g] / n[g]; if (!o) printf "n/a" }' "$1"
}
gpu_count() {
    nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true
}
