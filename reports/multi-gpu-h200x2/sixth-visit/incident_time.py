import json, sys, collections
# per run: workers' first-case start range, per-incident wall/cpu sums, busy worker-seconds, last done
for path in sys.argv[1:]:
    rs = [json.loads(l) for l in open(path) if l.strip()]
    rs = [r for r in rs if 'done_s' in r]
    by = collections.defaultdict(list)
    for r in rs: by[r.get('worker')].append(r)
    starts = sorted(min(x['done_s'] - x['wall_s'] for x in v) for v in by.values())
    ends = sorted(max(x['done_s'] for x in v) for v in by.values())
    print(path, len(rs), 'cases', len(by), 'workers; first starts %.2f..%.2f (median %.2f); last ends %.2f..%.2f (median %.2f)' % (starts[0], starts[-1], starts[len(starts)//2], ends[0], ends[-1], ends[len(ends)//2]))
    inc = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for r in rs:
        k = r['incident'][:4] + ' ' + r['variant']; inc[k][0] += 1; inc[k][1] += r['wall_s']; inc[k][2] += r.get('cpu_s', 0)
    tw = sum(v[1] for v in inc.values()); tc = sum(v[2] for v in inc.values())
    print('  wall sum %.1f s, cpu sum %.1f s' % (tw, tc))
    for k in sorted(inc): print('  %-32s %5d wall %7.2f cpu %7.2f' % (k, *inc[k]))
