#!/usr/bin/env bash
# check.sh: builds sampler.so and checks it on check_threads.c: a thread blocking every signal (1.0 s of CPU) and the
# main thread (0.5 s) running at once must get samples in about that ratio, with none dropped.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -Wall -Wextra -shared -fPIC -o "$tmp/sampler.so" "$here/sampler.c"
cc -O1 -o "$tmp/check_threads" "$here/check_threads.c" -lpthread
mkdir "$tmp/prof"
LAB_PROF_DIR="$tmp/prof" LD_PRELOAD="$tmp/sampler.so" "$tmp/check_threads"
python3 "$here/prof_summary.py" "$tmp/prof" | tee "$tmp/summary.txt" | sed -n '/== by thread$/,/^$/p'
python3 - "$tmp/summary.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
dropped = int(re.search(r"; (\d+) dropped", text).group(1))
block = text.split("== by thread\n")[1].split("\n\n")[0]
other = sum(int(l.split()[0]) for l in block.splitlines() if "(other)" in l)
main = sum(int(l.split()[0]) for l in block.splitlines() if "(main)" in l)
ratio = other / max(main, 1)
ok = dropped == 0 and 1.6 <= ratio <= 2.4
print("blocked thread %d samples, main %d: ratio %.2f (expected 2), %d dropped: %s" % (other, main, ratio, dropped, "ok" if ok else "WRONG"))
sys.exit(0 if ok else 1)
PY
