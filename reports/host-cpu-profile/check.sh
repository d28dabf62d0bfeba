#!/usr/bin/env bash
# check.sh: builds sampler.so and checks it on check_threads.c: a thread blocking every signal (1.0 s of CPU) and the
# main thread (0.5 s, then waiting for the other in pthread_join) running at once must get samples in about that ratio,
# with none dropped; with LAB_PROF_CLOCK=wall, about as many each (both live about 1 s).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -Wall -Wextra -shared -fPIC -o "$tmp/sampler.so" "$here/sampler.c"
cc -O1 -o "$tmp/check_threads" "$here/check_threads.c" -lpthread
check() { # CLOCK EXPECTED-RATIO
    rm -rf "$tmp/prof"; mkdir "$tmp/prof"
    LAB_PROF_CLOCK=$1 LAB_PROF_DIR="$tmp/prof" LD_PRELOAD="$tmp/sampler.so" "$tmp/check_threads"
    python3 "$here/prof_summary.py" "$tmp/prof" > "$tmp/summary.txt"
    python3 - "$tmp/summary.txt" "$1" "$2" <<'PY'
import re, sys
text, clock, want = open(sys.argv[1]).read(), sys.argv[2], float(sys.argv[3])
dropped = int(re.search(r"; (\d+) dropped", text).group(1))
block = text.split("== by thread\n")[1].split("\n\n")[0]
other = sum(int(l.split()[0]) for l in block.splitlines() if "(other)" in l)
main = sum(int(l.split()[0]) for l in block.splitlines() if "(main)" in l)
ratio = other / max(main, 1)
ok = dropped == 0 and 0.8 * want <= ratio <= 1.2 * want
print("%s clock: blocked thread %d samples, main %d: ratio %.2f (expected %g), %d dropped: %s" % (clock, other, main, ratio, want, dropped, "ok" if ok else "WRONG"))
sys.exit(0 if ok else 1)
PY
}
check cpu 2
check wall 1
