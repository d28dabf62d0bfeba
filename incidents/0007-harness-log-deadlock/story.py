"""story.py: the generated numbers and pictures of incident 0007's story (README.md), for
tools/stories/story_numbers.py, which finds this file, runs the CPU replays below and checks or rewrites what
they measure (`make stories`, `make test`)."""

from story_numbers import Block, Picture, Run, Svg, all_or, f_plain, f_range, incident_of, metric, seed_span

ID = incident_of(__file__)

# 0007: the old harness's blocked write at seed 1, and the log sizes the seeds draw.
R0007_BUG = Run(ID, "bug-full-log", seed=1)
R0007_FIX = Run(ID, "fix-drain", seeds=16)


def render_0007_write(res):
    r = res.of(R0007_BUG)[0]
    cap = metric(r, "pipe_capacity")
    figs = {"log": f_plain(metric(r, "log_bytes")), "ratio": "%.2f" % (metric(r, "log_bytes") / cap),
            "fill": f_plain(metric(r, "pipe_fill_bytes")), "cap": f_plain(cap),
            "read": f_plain(metric(r, "parent_read_bytes")),
            "blocked": "is blocked in" if metric(r, "blocked_in_write") == 1 and metric(r, "blocked_syscall") == 1
            else "is not blocked in"}
    t = ("At seed 1 the worker {blocked} `write(1, buf, {log})`, a log line {ratio}x the pipe. Its stdout pipe holds"
         " {fill} of {cap} bytes. The parent has read {read} bytes and is waiting on the socket.")
    return t, figs


def render_0007_sizes(res):
    recs = res.of(R0007_FIX)
    lo, hi = seed_span(recs)
    s = {r["seed"]: r for r in recs}
    figs = {"first": str(lo), "last": str(hi),
            "ratio": f_range([metric(r, "log_bytes") / metric(r, "pipe_capacity") for r in recs],
                             lambda v: "%.3gx" % v),
            "bytes": f_range([metric(r, "log_bytes") for r in recs], f_plain),
            "s1": f_plain(metric(s[1], "payload_bytes")), "s7": f_plain(metric(s[7], "log_bytes")),
            "pass": all_or(recs, lambda r: r["outcome"] == "PASS", "seed")}
    t = ("Over seeds {first} to {last} the whole-message log is {ratio} the pipe ({bytes} bytes; seed 1's payload is"
         " {s1} bytes, seed 7's log {s7}), and the draining parent (`fix-drain`) passes on {pass}.")
    return t, figs


BLOCKS = [
    Block("0007-blocked-write", ID, [R0007_BUG], render_0007_write,
          "the old harness's blocked write at seed 1"),
    Block("0007-log-sizes", ID, [R0007_FIX], render_0007_sizes,
          "the verbose log sizes the default 16 seeds draw"),
]


# The picture: the cycle of waits at seed 1 of the old harness, with the sizes the case measured.
def draw_cycle(res):
    r = res.of(R0007_BUG)[0]
    log, cap = metric(r, "log_bytes"), metric(r, "pipe_capacity")
    fill, read = metric(r, "pipe_fill_bytes"), metric(r, "parent_read_bytes")
    svg = Svg(900, 430, "0007: the cycle of waits at seed 1")
    svg.text(20, 30, "0007 seed 1: the worker and the parent wait for each other", size=16, weight="bold")
    red, box = "#c0392b", "#f4f6f8"
    # the two processes
    svg.rect(40, 120, 230, 150, box, stroke="#333", sw=1.5)
    svg.text(155, 145, "worker", size=15, anchor="middle", weight="bold")
    svg.text(155, 175, "logs the message whole:", size=12, anchor="middle")
    svg.text(155, 195, "write(1, _, %s)" % f_plain(log), size=12, anchor="middle")
    svg.text(155, 220, "blocked: the pipe is full" if metric(r, "blocked_in_write") == 1 else "not blocked",
             size=12, anchor="middle", fill=red)
    svg.text(155, 250, "then would send it on the socket", size=11, anchor="middle", italic=True)
    svg.rect(630, 120, 230, 150, box, stroke="#333", sw=1.5)
    svg.text(745, 145, "parent (test harness)", size=15, anchor="middle", weight="bold")
    svg.text(745, 175, "waits on the socket for", size=12, anchor="middle")
    svg.text(745, 195, "the message: %s bytes read" % f_plain(read), size=12, anchor="middle")
    svg.text(745, 220, "reads stdout only after it", size=12, anchor="middle", fill=red)
    # the pipe, drawn by its fill
    px, pw = 320, 260
    svg.text(px + pw / 2, 92, "stdout pipe: %s of %s bytes" % (f_plain(fill), f_plain(cap)), size=12,
             anchor="middle")
    svg.rect(px, 100, pw, 22, "#ffffff", stroke="#333")
    svg.rect(px, 100, pw * min(1.0, fill / cap), 22, "#f28e2b")
    svg.line(270, 130, px - 2, 112, stroke="#333", arrow=True)
    svg.line(px + pw + 2, 112, 628, 130, stroke="#999", dash="4 3")
    svg.text(px + pw / 2, 140, "a %s-byte line is %.2fx the pipe" % (f_plain(log), log / cap), size=12,
             anchor="middle")
    # the socket, empty
    svg.rect(px, 250, pw, 22, "#ffffff", stroke="#333")
    svg.text(px + pw / 2, 290, "socket: the message never sent", size=12, anchor="middle")
    svg.line(270, 255, px - 2, 261, stroke="#999", dash="4 3")
    svg.line(px + pw + 2, 261, 628, 255, stroke="#333", arrow=True)
    # the cycle
    svg.path("M 745 272 C 745 380, 155 380, 155 272", stroke=red, sw=2.5, arrow=True)
    svg.text(450, 372, "the parent waits for the worker's send", size=13, anchor="middle", fill=red)
    svg.path("M 155 118 C 155 50, 745 50, 745 118", stroke=red, sw=2.5, arrow=True)
    svg.text(450, 60, "the worker waits for the parent to read stdout", size=13, anchor="middle", fill=red)
    svg.text(20, 415, "fix-drain: the parent polls the socket and stdout together, so the pipe never stays full",
             size=12)
    return svg.svg()


PICTURES = [
    Picture("wait-cycle", ID, [R0007_BUG], draw_cycle,
            "the worker blocked on the full stdout pipe, the parent on the socket, at seed 1 of the old harness"),
]
