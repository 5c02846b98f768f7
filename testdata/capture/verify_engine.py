#!/usr/bin/env python3
"""Check the engine-loop captures (capture_engine.sh) against their ground-truth sidecars with SQL on
the trace (Python's standard library only: gzip, json, sqlite3):

  python3 testdata/capture/verify_engine.py testdata/traces/engine-*.sqlite.gz

For each NAME.sqlite.gz it reads NAME.truth.json beside it, prints the SQL facts per forward window,
then CHECK lines (ok / MISMATCH); it exits non-zero when a CHECK fails.

Windows: one cudaMemGetInfo marker at the start of every engine iteration (eagle: every forward);
forward i runs from its marker to the next marker. engine-window's first iteration began before the
window, so its marker is not in the trace: there, window 0 runs from the first API call to the first
marker. An API call (launch, copy) belongs to the window in which it started; a kernel or copy to the
window of the API call that launched it (by correlationId). The compute stream is the stream with the
most kernels; copies on any other stream are the KV transfers of the disaggregated workers.

What is checked against the truth, per forward (the truth is what engine_workload.py did):
- markers and windows;
- read-backs: device-to-host copies on the compute stream: 1 per iteration (eagle: 1 per verify, 0
  per draft; engine-window: 1 in the partial first iteration, 0 in the partial last, which ends
  inside its forward before its sampler);
- input copies: host-to-device copies on the compute stream: 1 per forward (the packed metadata:
  tokens, positions, slots, key slots, lengths, logit rows), eagle verify 2 (its metadata and the
  next round's hidden-state rows); their bytes exactly for prefill-only eager or piecewise
  iterations and for graph replays (the bucket's static layout), at least 8 x (3 x tokens + rows)
  otherwise;
- CUDA graphs: launches per window (eager 0, full graph 1, piecewise layers + 1), instantiations
  per window (1 in each graph-capture iteration, 0 elsewhere), kernels per replay the same for every
  replay of one bucket;
- KV transfers (disagg): device-to-host copies on another stream = the truth's exports (count and
  bytes, in the iteration that exported), host-to-device copies on another stream = 2 per import
  (slot indices, KV) in the iteration that issued it, the KV bytes equal to the truth's;
- NVTX (nvtx cases): the engine's range texts, in order, one per iteration and inside its window;
  vLLM: the iteration's read-back starts after its range ended (the sampler is outside it); SGLang:
  the five scheduler ranges in every iteration, the read-back inside scheduler.process_batch_result;
- eagle: each draft replay has fewer kernels than each verify replay; the last round's draft forwards
  are the last windows, with no verify after them;
- engine-window: the partial first and last windows hold fewer kernels than the smallest full one.
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
        print("CHECK %s %s: ok (%s)" % (name, label, short(got)))
    else:
        print("CHECK %s %s: MISMATCH want %s got %s" % (name, label, short(want), short(got)))
        bad = 1


def short(x):
    s = json.dumps(x) if not isinstance(x, str) else x
    return s if len(s) < 400 else s[:400] + "..."


def q(db, sql, *args):
    return db.execute(sql, args).fetchall()


def verify(gz):
    name = os.path.basename(gz)[: -len(".sqlite.gz")]
    truth = json.load(open(gz[: -len(".sqlite.gz")] + ".truth.json"))
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, name + ".sqlite")
    with gzip.open(gz) as src, open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    db = sqlite3.connect(path)
    fws = truth["forwards"]
    n = len(fws)
    print("=== %s  gz_bytes=%d sqlite_bytes=%d" % (name, os.path.getsize(gz), os.path.getsize(path)))
    print("truth:", json.dumps(truth["counts"]))
    api = q(db, "SELECT r.start, r.end, r.correlationId, s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
                "JOIN StringIds s ON s.id = r.nameId ORDER BY r.start")
    marks = [a[0] for a in api if a[3].startswith("cudaMemGetInfo")]
    check(name, "markers", truth["markers"], len(marks))
    lead = n - len(marks)  # 1 where the first forward's marker precedes the window
    t_first = api[0][0]
    bounds = ([t_first] if lead else []) + marks + [1 << 62]
    check(name, "windows", n, len(bounds) - 1)

    def win(t):
        lo, hi = 0, len(bounds) - 1
        if t < bounds[0]:
            return -1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if bounds[mid] <= t:
                lo = mid
            else:
                hi = mid
        return lo
    corr = {a[2]: a for a in api}
    main = q(db, "SELECT streamId FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY streamId ORDER BY count(*) DESC LIMIT 1")[0][0]
    kern = q(db, "SELECT start, end, correlationId, streamId, graphNodeId FROM CUPTI_ACTIVITY_KIND_KERNEL")
    kpw = [0] * n
    before = 0
    kpl = {}
    for k in kern:
        a = corr.get(k[2])
        if a is None:
            continue
        w = win(a[0])
        if w < 0:
            before += 1
            continue
        kpw[w] += 1
        if "GraphLaunch" in a[3]:
            kpl[k[2]] = kpl.get(k[2], 0) + 1
    mc = q(db, "SELECT correlationId, copyKind, bytes, streamId FROM CUPTI_ACTIVITY_KIND_MEMCPY")
    d2h_main, d2h_other, h2d_main, h2d_other = ([0] * n for _ in range(4))
    h2d_main_bytes, d2h_other_bytes, h2d_other_bytes = ([0] * n for _ in range(3))
    d2h_main_t = [[] for _ in range(n)]
    for c, kind, nb, st in mc:
        a = corr.get(c)
        if a is None:
            continue
        w = win(a[0])
        if w < 0:
            continue
        if kind == 2 and st == main:
            d2h_main[w] += 1
            d2h_main_t[w].append(a[0])
        elif kind == 2:
            d2h_other[w] += 1
            d2h_other_bytes[w] += nb
        elif kind == 1 and st == main:
            h2d_main[w] += 1
            h2d_main_bytes[w] += nb
        elif kind == 1:
            h2d_other[w] += 1
            h2d_other_bytes[w] += nb
    gl, inst = [0] * n, [0] * n
    launches = []
    for a in api:
        w = win(a[0])
        if w < 0:
            continue
        if "GraphLaunch" in a[3]:
            gl[w] += 1
            launches.append((w, a[2]))
        if a[3].startswith("cudaGraphInstantiate") or a[3].startswith("cuGraphInstantiate"):
            inst[w] += 1
    print("kernels", len(kern), "kernels_before_first_window", before,
          "graph_node_kernels", sum(1 for k in kern if k[4]))
    print("kernels_per_window", ",".join(map(str, kpw)))
    print("graph_launches_per_window", ",".join(map(str, gl)))
    print("kernels_per_graph_launch", ",".join(str(kpl.get(c, 0)) for _, c in launches))
    print("H2D_main_per_window", ",".join(map(str, h2d_main)), "bytes", ",".join(map(str, h2d_main_bytes)))
    print("D2H_main_per_window", ",".join(map(str, d2h_main)))
    if any(d2h_other) or any(h2d_other):
        print("D2H_other_per_window", ",".join(map(str, d2h_other)), "bytes", sum(d2h_other_bytes))
        print("H2D_other_per_window", ",".join(map(str, h2d_other)), "bytes", sum(h2d_other_bytes))
    ms = [round((min(bounds[i + 1], api[-1][1]) - bounds[i]) / 1e6, 2) for i in range(n)]
    print("window_ms", ",".join(map(str, ms)))

    # ---- expected, from the truth
    c = truth["model"]
    L = truth["engine"].get("max_len", 512)
    eagle = truth["case"] == "eagle"
    want_d2h, want_h2d, want_gl, want_inst = [], [], [], []
    for i, f in enumerate(fws):
        if eagle:
            want_d2h.append(1 if f["model"] == "target" else 0)
            want_h2d.append(2 if f["model"] == "target" else 1)
            want_gl.append(1)
            want_inst.append(0)
            continue
        part = f["phase"] == "partial"
        want_d2h.append(0 if part and i == n - 1 else 1)
        want_h2d.append(0 if part and i == 0 else 1)
        want_gl.append({"eager": 0, "replay": 1, "capture": 1, "piecewise": c["layers"] + 1}[f["graph"]])
        want_inst.append(1 if f.get("graph_capture") else 0)
    check(name, "read-backs (D2H, compute stream) per window", want_d2h, d2h_main)
    check(name, "input copies (H2D, compute stream) per window", want_h2d, h2d_main)
    check(name, "graph launches per window", want_gl, gl)
    check(name, "graph instantiations per window", want_inst, inst)
    # input bytes
    exact, atleast = [], []
    for i, f in enumerate(fws):
        if eagle or f["phase"] == "partial" and i == 0:
            continue
        T, R = f["tokens"], f["batch"]
        if f["graph"] in ("replay", "capture"):
            B = f["bucket"]
            exact.append((i, 8 * (3 * B + B * L + B), h2d_main_bytes[i]))
        elif f["decode_tokens"] == 0:
            keys = sum(ch["start"] + ch["tokens"] for ch in f["prompt_chunks"] if ch["start"] > 0)
            exact.append((i, 8 * (3 * T + keys + R), h2d_main_bytes[i]))
        else:
            atleast.append((i, 8 * (3 * T + R), h2d_main_bytes[i]))
    check(name, "input bytes, prefill-only and graph iterations (%d)" % len(exact),
          [w for _, w, _ in exact], [g for _, _, g in exact])
    check(name, "input bytes >= 8 x (3 x tokens + rows), other iterations (%d)" % len(atleast),
          [], [(i, w, g) for i, w, g in atleast if g < w])
    # one kernel count per bucket across its replays
    per_bucket = {}
    for (w, cid) in launches:
        f = fws[w]
        key = (f.get("model"), f["bucket"]) if f["graph"] != "piecewise" else None
        if key is not None:
            per_bucket.setdefault(key, set()).add(kpl.get(cid, 0))
    check(name, "kernels per replay constant per bucket", {str(k): 1 for k in per_bucket},
          {str(k): len(v) for k, v in per_bucket.items()})
    if per_bucket:
        print("kernels_per_replay_by_bucket", {str(k): sorted(v) for k, v in per_bucket.items()})

    # ---- KV transfers
    exports = [0] * n
    export_bytes = [0] * n
    for e in truth.get("kv_exports", []):
        i = next(j for j, f in enumerate(fws) if f["iteration"] == e["iteration"])
        exports[i] += 1
        export_bytes[i] += e["bytes"]
    imports = [0] * n
    import_bytes = 0
    for e in truth.get("kv_imports", []):
        if e["issued_in_iteration"] is None:
            continue
        i = next(j for j, f in enumerate(fws) if f["iteration"] == e["issued_in_iteration"])
        imports[i] += 2
        import_bytes += e["bytes"]
    check(name, "KV exports (D2H, transfer stream) per window", exports, d2h_other)
    check(name, "KV export bytes per window", export_bytes, d2h_other_bytes)
    if not truth.get("kv_exports"):  # the prefill worker's transfer-stream H2D are its slot indices (below)
        check(name, "KV imports (H2D, transfer stream: slots + KV) per window", imports, h2d_other)
    if truth.get("kv_imports"):
        kvb = sum(b for b in h2d_other_bytes) - sum(8 * e["tokens"] for e in truth["kv_imports"]
                                                   if e["issued_in_iteration"] is not None)
        check(name, "KV import bytes (KV part)", import_bytes, kvb)
    if truth.get("kv_exports"):
        # the prefill worker's transfer stream also copies the slot indices in (H2D), one per export
        check(name, "KV export slot-index copies (H2D, transfer stream) per window", exports, h2d_other)

    # ---- NVTX
    nv = truth["engine"].get("nvtx")
    if nv:
        rng = q(db, "SELECT e.start, e.end, coalesce(e.text, s.value) FROM NVTX_EVENTS e LEFT JOIN StringIds s "
                    "ON s.id = e.textId WHERE e.eventType = 59 ORDER BY e.start")
        if nv.startswith("vllm"):
            mine = [r for r in rng if r[2].startswith("execute_")]
            check(name, "vLLM ranges = one per iteration, text as the worker writes it",
                  [f["nvtx"] for f in fws], [r[2] for r in mine])
            check(name, "each range inside its iteration's window", list(range(n)),
                  [win(r[0]) if win(r[0]) == win(r[1]) else -1 for r in mine])
            check(name, "read-back after the range's end (sampler outside it)", [True] * n,
                  [bool(d2h_main_t[i]) and min(d2h_main_t[i]) > mine[i][1] for i in range(min(n, len(mine)))])
        else:
            names = ["scheduler.recv_requests", "scheduler.process_input_requests",
                     "scheduler.get_next_batch_to_run", "scheduler.run_batch", "scheduler.process_batch_result"]
            per = [[] for _ in range(n)]
            for r in rng:
                if r[2].startswith("scheduler."):
                    per[win(r[0])].append(r)
            check(name, "SGLang scheduler ranges in every iteration, in order", [names] * n,
                  [[r[2] for r in p] for p in per])
            ok = []
            for i, p in enumerate(per):
                pbr = [r for r in p if r[2] == "scheduler.process_batch_result"]
                ok.append(bool(pbr) and all(pbr[0][0] <= t <= pbr[0][1] for t in d2h_main_t[i]))
            check(name, "read-back inside scheduler.process_batch_result", [True] * n, ok)
        other = sorted({r[2] for r in rng if not r[2].startswith(("execute_", "scheduler."))})
        print("other_nvtx_ranges", other)

    # ---- case-specific
    if eagle:
        dk = [kpw[i] for i, f in enumerate(fws) if f["model"] == "draft"]
        vk = [kpw[i] for i, f in enumerate(fws) if f["model"] == "target"]
        check(name, "draft forwards shallower than verifies (max draft < min verify kernels)", True,
              max(dk) < min(vk))
        last = truth["rounds"][-1]
        check(name, "last round: draft forwards only, the trace's last windows",
              list(range(n - last["draft_forwards"], n)), last["forwards"])
        print("draft_kernels", sorted(set(dk)), "verify_kernels", sorted(set(vk)))
    if truth["case"] == "window":
        full = kpw[1:-1]
        check(name, "partial first window smaller than the smallest full one", True, kpw[0] < min(full))
        check(name, "partial last window smaller than the smallest full one", True, kpw[-1] < min(full))
        check(name, "no kernel launched before the first window", 0, before)
    db.close()
    shutil.rmtree(tmp)


def main():
    for gz in sys.argv[1:]:
        verify(gz)
    sys.exit(bad)


if __name__ == "__main__":
    main()
