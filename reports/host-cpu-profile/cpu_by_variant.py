#!/usr/bin/env python3
import json, sys
# per-variant CPU a case from summary.json files: cpuv.py DIR...
for d in sys.argv[1:]:
    try: s = json.load(open(d + "/summary.json"))
    except Exception as e: print(d, "no summary", e); continue
    tc = 0
    print("%s: %s wall %.2f s, %d cases" % (d.split('/')[-1], "ok" if s.get("ok") else "NOT OK", s["wall_s"], s["cases"]))
    for i in s["incidents"]:
        for v in i["variants"]:
            n = sum(v["counts"].values()); tc += v["cpu_s"]
            print("  %-10s %-22s %5d cases cpu %7.2f s = %6.2f ms/case  wall %6.2f ms/case" % (i["id"][:4], v["name"], n, v["cpu_s"], 1e3 * v["cpu_s"] / max(n, 1), 1e3 * v["case_wall_s"] / max(n, 1)))
    print("  total cpu %.1f s" % tc)
