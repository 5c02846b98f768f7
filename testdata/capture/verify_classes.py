#!/usr/bin/env python3
"""Check the captures of capture_classes.sh (issue 44) against their ground-truth sidecars with SQL on the
trace (Python's standard library only):

  python3 testdata/capture/verify_classes.py testdata/traces/{engine-two-servers,...}.sqlite.gz

For each NAME.sqlite.gz it reads NAME.truth.json beside it, prints facts per forward window and CHECK lines
(ok / MISMATCH); it exits non-zero when a CHECK fails. With --write-spans it adds to engine-lifetime's truth
each phase's span on the trace's clock ("trace_ns", derived here from the markers; see below).

Windows, per process (pid = globalTid >> 24 & 0xffffff): one cudaMemGetInfo marker at the start of every
engine iteration (train-loop: every training step); window i runs from marker i to marker i + 1 of the same
process (the last to the process's last API call). An API call belongs to the window in which it started; a
kernel or copy to the window of the API call that launched it ((pid, correlationId)). The compute stream of a
process is its stream with the most kernels; other streams are side streams (swap-in / swap-out copies).

Checked against the truth (what classes_workload.py did):
- every capture: markers per process = the truth's forwards of that pid; one device-to-host read-back on the
  compute stream per engine iteration; one host-to-device input copy on the compute stream per iteration;
  graph launches per window: 0 for an eager iteration, 1 for a graph replay, layers + 1 for a piecewise one;
  attention kernels (cuDNN SDPA, names holding "sdpa") per window = layers x the truth's attention calls
  per layer (mixed-*: decode rows one call, each prompt chunk one), in eager and piecewise iterations;
- two-servers / draft-target: two processes with kernels, both on device 0; two-servers: the GPU work of the
  two processes' windows (first kernel start to last kernel end) overlaps in time (free-running),
  draft-target: it does not (lockstep), and the markers come as draft, target, then K drafts and a target a
  round;
- lifetime: the clock offset (marker end - its t_ns) is constant within 100 us; mapped to the trace, the
  load span holds the >= 1 MiB host-to-device copies (>= 2 GiB), the warm-up span kernels and no marker, the
  graph-capture span the 4 cudaGraphInstantiate calls, the serve span every marker, shutdown no kernel;
- swap-in, swap-in-eager: per swap-in iteration two host-to-device copies on a side stream (slot indices, 8 bytes a token, and
  the KV of the truth's bytes) whose KV copy lies inside the window's forward (between its first and last
  compute-stream kernels) and, under graphs, overlaps a replay kernel; per swap-out
  (issued before its iteration's marker: in the window before) the slot indices host to device and the KV
  device to host of the truth's bytes, on a side stream; no side-stream copy in any other window;
- graph-level, graph-level-decode: one CUPTI_ACTIVITY_KIND_GRAPH_TRACE row per replay window, none elsewhere;
- train-loop: per window a loss read-back (4 bytes), backward kernels (names with "backward" or "Backward")
  and AdamW's multi_tensor_apply kernels;
- load-weights: the truth's host-to-device copies (count, bytes), one kernel (the fp32 -> bf16 conversion).
"""
import gzip
import json
import os
import shutil
import sqlite3
import sys
import tempfile

bad = 0


def check(name, label, want, got):
    global bad
    if want == got:
        print("CHECK %s %s: ok (%s)" % (name, label, str(got)[:120]))
    else:
        print("CHECK %s %s: MISMATCH want %s got %s" % (name, label, str(want)[:300], str(got)[:300]))
        bad = 1


PID = "((%s >> 24) & 16777215)"


def load(db):
    c = db.cursor()
    marker_ids = [r[0] for r in c.execute("SELECT id FROM StringIds WHERE value LIKE 'cudaMemGetInfo%'")]
    names = dict(c.execute("SELECT id, value FROM StringIds"))
    rt = c.execute("SELECT start, end, %s, correlationId, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME ORDER BY start"
                   % (PID % "globalTid")).fetchall()
    ks = c.execute("SELECT start, end, %s, correlationId, streamId, shortName, deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL"
                   % (PID % "globalPid")).fetchall()
    ms = c.execute("SELECT start, end, %s, correlationId, streamId, copyKind, bytes FROM CUPTI_ACTIVITY_KIND_MEMCPY"
                   % (PID % "globalPid")).fetchall()
    gt = []
    if c.execute("SELECT count(*) FROM sqlite_master WHERE name='CUPTI_ACTIVITY_KIND_GRAPH_TRACE'").fetchone()[0]:
        gt = c.execute("SELECT start, end, %s, correlationId FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
                       % (PID % "globalPid")).fetchall()
    return marker_ids, names, rt, ks, ms, gt


class Proc:
    def __init__(self, pid, rt, marker_ids, names):
        self.pid = pid
        self.rt = [r for r in rt if r[2] == pid]
        self.markers = [r for r in self.rt if r[4] in marker_ids]
        self.bounds = [m[0] for m in self.markers] + [max(r[1] for r in self.rt) + 1 if self.rt else 0]
        self.win_of_corr = {}
        self.name_of_corr = {}
        for r in self.rt:
            w = self.window(r[0])
            self.win_of_corr[r[3]] = w
            self.name_of_corr[r[3]] = names.get(r[4], "")

    def window(self, t):
        if not self.markers or t < self.bounds[0]:
            return -1
        lo, hi = 0, len(self.bounds) - 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.bounds[mid] <= t:
                lo = mid
            else:
                hi = mid
        return lo


def per_window(p, rows, n):
    out = [[] for _ in range(n)]
    for r in rows:
        w = p.win_of_corr.get(r[3], -1)
        if 0 <= w < n:
            out[w].append(r)
    return out


def verify(path, write_spans=False):
    name = os.path.basename(path)[: -len(".sqlite.gz")] if path.endswith(".gz") else os.path.basename(path)[:-7]
    tpath = path[: -len(".sqlite.gz")] + ".truth.json" if path.endswith(".gz") else path[:-7] + ".truth.json"
    truth = json.load(open(tpath))
    tmp = tempfile.mkdtemp()
    try:
        db_path = path
        if path.endswith(".gz"):
            db_path = os.path.join(tmp, name + ".sqlite")
            with gzip.open(path) as src, open(db_path, "wb") as dst:
                shutil.copyfileobj(src, dst)
        db = sqlite3.connect(db_path)
        marker_ids, names, rt, ks, ms, gt = load(db)
        print("== %s: %d API calls, %d kernels, %d copies, %d graph-trace rows" % (name, len(rt), len(ks), len(ms), len(gt)))
        kpids = sorted({k[2] for k in ks})
        fws = truth.get("forwards", [])
        tpids = sorted({f["pid"] for f in fws}) if fws else [truth.get("pid")]
        if truth.get("pids"):
            check(name, "processes with kernels", sorted(truth["pids"]), kpids)
            check(name, "devices", [0], sorted({k[6] for k in ks}))
        else:
            check(name, "one process with kernels", [truth["pid"]], kpids)
        procs = {}
        for pid in tpids:
            p = Proc(pid, rt, marker_ids, names)
            procs[pid] = p
            mine = [f for f in fws if f["pid"] == pid]
            check(name, "pid %d markers" % pid, len(mine), len(p.markers))
            if truth.get("trace_kind") or not mine:
                continue
            engine_checks(name, truth, p, mine, ks, ms, gt)
        if truth.get("pids"):
            two_proc_checks(name, truth, procs, ks)
        kind = truth.get("case")
        if kind == "lifetime":
            lifetime_checks(name, truth, procs[tpids[0]], rt, ks, ms, names, tpath if write_spans else None)
        if kind in ("swap-in", "swap-in-eager"):
            swap_checks(name, truth, procs[tpids[0]], ks, ms)
        if kind in ("graph-level", "graph-level-decode"):
            p = procs[tpids[0]]
            per = per_window(p, gt, len(p.markers))
            check(name, "graph-trace rows per window", [1 if f["graph"] == "replay" else 0 for f in fws],
                  [len(x) for x in per])
            check(name, "kernel rows of graph replays", 0,
                  sum(1 for k in ks if p.name_of_corr.get(k[3], "").startswith("cudaGraphLaunch")))
        if kind == "train":
            train_checks(name, truth, procs[tpids[0]], ks, ms, names)
        if kind == "load":
            h2d = sorted([m[6] for m in ms if m[5] == 1])
            check(name, "host-to-device copies (bytes)", sorted(c["bytes"] for c in truth["copies"]), h2d)
            check(name, "kernels", 1, len(ks))
            print("  copies %.2f GB in %.3f s (first start to last end)" % (
                sum(h2d) / 1e9, (max(m[1] for m in ms) - min(m[0] for m in ms)) / 1e9))
        db.close()
    finally:
        shutil.rmtree(tmp)


def compute_stream(p, ks):
    n = {}
    for k in ks:
        if k[2] == p.pid:
            n[k[4]] = n.get(k[4], 0) + 1
    return max(n, key=n.get)


def engine_checks(name, truth, p, mine, ks, ms, gt):
    n = len(p.markers)
    cs = compute_stream(p, ks)
    kw = per_window(p, [k for k in ks if k[2] == p.pid], n)
    mw = per_window(p, [m for m in ms if m[2] == p.pid], n)
    layers = (truth.get("model") or {}).get("layers")
    if truth.get("processes"):
        layers = [x for x in truth["processes"] if x["pid"] == p.pid][0]["model"]["layers"]
    check(name, "pid %d read-backs per window (D2H on the compute stream)" % p.pid, [1] * n,
          [sum(1 for m in w if m[5] == 2 and m[4] == cs) for w in mw])
    check(name, "pid %d input copies per window (H2D on the compute stream)" % p.pid, [1] * n,
          [sum(1 for m in w if m[5] == 1 and m[4] == cs) for w in mw])
    want_g = [{"eager": 0, "replay": 1, "capture": 1, "piecewise": layers + 1}[f["graph"]] for f in mine]
    got_g = [sum(1 for r in p.rt if p.win_of_corr.get(r[3]) == i and p.name_of_corr[r[3]].startswith("cudaGraphLaunch"))
             for i in range(n)]
    check(name, "pid %d graph launches per window" % p.pid, want_g, got_g)
    if any("attention_calls_per_layer" in f for f in mine):
        sd = [sum(1 for k in w if "sdpa" in names_of(k)) for w in kw]
        want = [layers * f["attention_calls_per_layer"] for f in mine]
        check(name, "pid %d attention kernels per window (layers x calls per layer)" % p.pid, want, sd)
        mixed = [i for i, f in enumerate(mine) if f["phase"] == "mixed"]
        print("  mixed iterations %s: decode rows %s, prompt chunk tokens %s" % (
            mixed, [mine[i]["decode_tokens"] for i in mixed], [mine[i]["prompt_chunk_tokens"] for i in mixed]))
    kn = [len(w) for w in kw]
    print("  pid %d kernels per window: %s" % (p.pid, kn))


NAMES = {}


def names_of(k):
    return NAMES.get(k[5], "")


def two_proc_checks(name, truth, procs, ks):
    # each window's GPU work: from its first kernel's start to its last kernel's end
    spans = {}
    for pid, p in procs.items():
        kw = per_window(p, [k for k in ks if k[2] == pid], len(p.markers))
        spans[pid] = [(min(k[0] for k in w), max(k[1] for k in w)) for w in kw if w]
    a, b = sorted(procs)
    overl = sum(1 for x in spans[a] for y in spans[b] if x[0] < y[1] and y[0] < x[1])
    if truth["case"] == "two-servers":
        check(name, "GPU work of the two processes' windows overlaps in time", True, overl > 0)
        print("  overlapping window pairs: %d" % overl)
    else:
        check(name, "GPU work of the two processes' windows overlaps in time", False, overl > 0)
        fws = truth["forwards"]
        seq = "".join("T" if f["model"] == "target" else "D" for f in fws)
        K = truth["num_draft_tokens"]
        check(name, "order of windows (D = draft server, T = target)", "DT" + ("D" * K + "T") * (truth["rounds_run"] - 1), seq)
        # the trace's own order of the two processes' markers
        ms = sorted([(p.markers[i][0], "T" if [f for f in fws if f["pid"] == pid][0]["model"] == "target" else "D")
                     for pid, p in procs.items() for i in range(len(p.markers))])
        check(name, "markers in the trace in that order", seq, "".join(x[1] for x in ms))


def lifetime_checks(name, truth, p, rt, ks, ms, names, write):
    fws = truth["forwards"]
    # t_ns is taken right after the marker call returns: its end is the nearer instant
    offs = [m[1] - f["t_ns"] for m, f in zip(p.markers, fws)]
    off = sorted(offs)[len(offs) // 2]
    check(name, "clock offset constant within 100us (the phases last 90 ms or more)", True, max(offs) - min(offs) < 100000)
    print("  clock offset trace - monotonic: %d ns (spread %d ns)" % (off, max(offs) - min(offs)))
    spans = {}
    for ph in truth["phases"]:
        spans[ph["phase"]] = (ph["t0_ns"] + off, ph["t1_ns"] + off)
        ph["trace_ns"] = [ph["t0_ns"] + off, ph["t1_ns"] + off]

    def inside(t, sp):
        return sp[0] <= t < sp[1]
    big = [m for m in ms if m[5] == 1 and m[6] >= 1 << 20]
    check(name, "large H2D copies all in the load span", len(big), sum(1 for m in big if inside(m[0], spans["load"])))
    check(name, "load span: >= 2 GiB host to device", True, sum(m[6] for m in big) >= 2 << 30)
    kin = {ph: sum(1 for k in ks if inside(k[0], sp)) for ph, sp in spans.items()}
    check(name, "warm-up span holds kernels", True, kin["warm-up"] > 100)
    check(name, "markers in the serve span", len(fws), sum(1 for m in p.markers if inside(m[0], spans["serve"])))
    inst = [r for r in rt if names.get(r[4], "").startswith("cudaGraphInstantiate")]
    check(name, "cudaGraphInstantiate calls in the graph-capture span", [len(truth["engine"]["buckets"])] * 2,
          [len(inst), sum(1 for r in inst if inside(r[0], spans["graph-capture"]))])
    check(name, "kernels in the shutdown span", 0, kin["shutdown"])
    first_k = min(k[0] for k in ks)
    print("  kernels per phase: %s; first kernel at %.3f s; phases (s): %s" % (
        kin, first_k / 1e9, {k: round((v[1] - v[0]) / 1e9, 3) for k, v in spans.items()}))
    print("  load: %d H2D copies >= 1 MiB, %.2f GB" % (len(big), sum(m[6] for m in big) / 1e9))
    if write:
        truth["phases_trace_ns_note"] = ("each phase's trace_ns = [t0_ns, t1_ns] + the clock offset, the median over "
                                         "the markers of (marker start on the trace - its t_ns): derived by "
                                         "testdata/capture/verify_classes.py --write-spans")
        with open(write, "w") as f:
            f.write(json.dumps(truth, indent=1) + "\n")


def swap_checks(name, truth, p, ks, ms):
    n = len(p.markers)
    cs = compute_stream(p, ks)
    mw = per_window(p, [m for m in ms if m[2] == p.pid], n)
    kw = per_window(p, [k for k in ks if k[2] == p.pid], n)
    ins = {s["iteration"]: s for s in truth["swaps"] if s["kind"] == "swap-in"}
    outs = {s["iteration"]: s for s in truth["swaps"] if s["kind"] == "swap-out"}
    # a swap-out is issued before its iteration's marker: it lies in the window before
    want_side, got_side = [], []
    for i in range(n):
        side = [m for m in mw[i] if m[4] != cs]
        w = []
        if i in ins:  # the slot indices (int64 a token) and the KV, host to device
            w += [("h2d", 8 * ins[i]["tokens"]), ("h2d", ins[i]["bytes"])]
        if i + 1 in outs:  # the slot indices in, the KV out
            w += [("h2d", 8 * outs[i + 1]["tokens"]), ("d2h", outs[i + 1]["bytes"])]
        want_side.append(sorted(w))
        got_side.append(sorted(({1: "h2d", 2: "d2h"}.get(m[5], str(m[5])), m[6]) for m in side))
    check(name, "side-stream KV copies per window", want_side, got_side)
    ov, inside = [], []
    for i in sorted(ins):
        kv = max((m for m in mw[i] if m[4] != cs and m[5] == 1), key=lambda m: m[6])
        gk = [k for k in kw[i] if k[4] == cs]
        ov.append(any(k[0] < kv[1] and kv[0] < k[1] for k in gk))
        inside.append(min(k[0] for k in gk) < kv[0] and kv[1] < max(k[1] for k in gk))
    check(name, "each swap-in KV copy lies inside its window's forward (its compute-stream kernels' span)",
          [True] * len(ins), inside)
    if truth["engine"]["mode"] == "graph":
        # a replay keeps the GPU busy; an eager decode forward is launch-bound: the copy falls between kernels
        check(name, "each swap-in KV copy overlaps a kernel of its window's replay", [True] * len(ins), ov)
    print("  swap-in KV copies overlapping a compute-stream kernel: %s" % ov)


def train_checks(name, truth, p, ks, ms, names):
    n = len(p.markers)
    kw = per_window(p, [k for k in ks if k[2] == p.pid], n)
    mw = per_window(p, [m for m in ms if m[2] == p.pid], n)
    check(name, "loss read-back per window (D2H, 4 bytes)", [[4]] * n, [[m[6] for m in w if m[5] == 2] for w in mw])
    bw = [sum(1 for k in w if "ackward" in names_of(k)) for w in kw]
    opt = [sum(1 for k in w if "multi_tensor_apply" in names_of(k)) for w in kw]
    check(name, "backward kernels in every window", True, all(x > 0 for x in bw))
    check(name, "optimizer (multi_tensor_apply) kernels in every window", True, all(x > 0 for x in opt))
    print("  kernels per window %s, backward %s, multi_tensor_apply %s" % ([len(w) for w in kw], bw, opt))


def main():
    args = [x for x in sys.argv[1:] if not x.startswith("--")]
    write = "--write-spans" in sys.argv
    for path in args:
        # names for the kernel checks (shortName ids are per file)
        NAMES.clear()
        tmp = None
        if path.endswith(".gz"):
            tmp = tempfile.mkdtemp()
            p2 = os.path.join(tmp, "x.sqlite")
            with gzip.open(path) as src, open(p2, "wb") as dst:
                shutil.copyfileobj(src, dst)
            NAMES.update(sqlite3.connect(p2).execute("SELECT id, value FROM StringIds").fetchall())
            shutil.rmtree(tmp)
        else:
            NAMES.update(sqlite3.connect(path).execute("SELECT id, value FROM StringIds").fetchall())
        verify(path, write)
    print("verify_classes: %s" % ("all checks ok" if not bad else "MISMATCHES"))
    sys.exit(bad)


if __name__ == "__main__":
    main()
