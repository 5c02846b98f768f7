#!/usr/bin/env python3
"""Engine captures of issue 44: the classes of trace the engine loops of engine_workload.py did not cover.

Same engine (paged KV cache, continuous batching, chunked prefill, sampler, read-back every iteration;
testdata/capture/engine_workload.py), same ground-truth marker: one torch.cuda.mem_get_info()
(cudaMemGetInfo) at the start of every engine iteration, deleted before stepstat runs. Cases (--case):

  two-servers     two model servers (engine processes: an MoE engine with graph buckets and a dense
                  mistral engine all eager) sharing device 0, started by this process as two children
                  (fork + exec: profile with --trace-fork-before-exec=true); each serves its own
                  requests, free-running, between a common cudaProfilerStart/Stop barrier
  draft-target    a draft server process (1-layer mistral engine, eager) beside its target (MoE engine,
                  graph buckets), in lockstep through this parent: per round the draft runs K=3 decode
                  iterations, then the target one (it consumes the draft's tokens on the host; the
                  target's forward is a decode iteration of its batch)
  lifetime        a whole process, profiled without a capture range (nsys profile python ...): CUDA
                  start-up, weight loading (the model built on the host, then copied; plus 2 GiB of
                  extra weight shards, host to device), warm-up (eager iterations), CUDA graph capture
                  (buckets 1, 2, 4, 8), the served loop (markers), shutdown (graphs freed, cache emptied)
  swap-in         graph-bucket engine, 8 requests; requests are preempted (their KV swapped out to
                  pinned host memory on a side stream) and later swapped back in: a host-to-device KV
                  copy + index_copy_ into new pages on the side stream, issued right after the
                  iteration's graph replay was launched (overlapping the forward); the request joins
                  the next iteration. Every served iteration after the prompt iteration is decode
  mixed-eager     graph-bucket engine (decode-only iterations replay a graph), prompt-holding
                  iterations eager: attention as two calls per layer (the decode rows, the prompt
                  chunk); prompts of 19-110 tokens; a burst of arrivals at iterations 0-6, then one
                  every 5 iterations while 8 run (a chunk beside 7 decode rows), the run ends in decode
  mixed-piecewise the same program under vLLM V1 piecewise graphs: a prompt-holding iteration of <= 128
                  tokens replays graph pieces with each layer's attention eager between them
  swap-in-eager   the same all eager: the swap-in is issued from a forward hook after layer 1's launches
  graph-level     graph-bucket engine, 8 requests at once: one eager prefill iteration, then 15 decode
                  iterations each one graph replay; profile with --cuda-graph-trace=graph
  graph-level-decode  the same with the prefill iteration before the window: 13 decode replays only
  train           not inference: a small decoder trained (bf16 autocast, forward, cross-entropy,
                  backward, AdamW step, loss read back), 10 steps in the window
  load            not inference: a weight-loading window: 3 GiB of weight shards copied host to device
                  (12 x 256 MiB, pageable), a dtype conversion of 2 of them, no serving loop

Each writes the ground truth (--truth) as engine_workload.py does: "forwards" (model "target" for the
served loop's iterations; "draft" for a draft server's; every forward with its pid), plus per case
"processes", "phases" (time spans, time.monotonic_ns), "swaps", "training_steps" or "copies".
"""
import argparse
import gc
import json
import os
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import engine_workload as ew  # noqa: E402
from engine_workload import Engine, Recorder, Req, build, prompts, run_program, req_rows, counts  # noqa: E402

NOTE = ("one cudaMemGetInfo (torch.cuda.mem_get_info) at the start of every engine iteration (train: of every "
        "training step), before its input copy: test scaffolding, the analyzer must give the same result without "
        "those rows")


def mono():
    return time.monotonic_ns()


def prof_start(a):
    torch.cuda.synchronize()
    if not a.probe:
        torch.cuda.cudart().cudaProfilerStart()


def prof_stop(a):
    torch.cuda.synchronize()
    if not a.probe:
        torch.cuda.cudart().cudaProfilerStop()


def finish(fws, pid, proc):
    for f in fws:
        f["pid"] = pid
        f["process"] = proc
    return fws


# --------------------------------------------------------------------------- children (a and b)

def child_engine(kind, dev, a):
    """The engine of one server process: (engine, vocab, description)."""
    if kind == "moe-graph":
        m, c = build("moe", dev)
        eng = Engine(m, c, dev, a, mode="graph", budget=256, max_seqs=8)
        for B in eng.buckets:
            eng.capture_bucket(B)
    elif kind == "mistral-eager":
        m, c = build("mistral", dev, seed=4321)
        eng = Engine(m, c, dev, a, mode="eager", budget=256, max_seqs=8)
    elif kind == "draft":
        m, c = build("mistral", dev, seed=99, layers=1)
        eng = Engine(m, c, dev, a, mode="eager", budget=512, max_seqs=8)
    else:
        raise SystemExit("unknown child kind " + kind)
    ew.warm(eng, c["vocab"])
    return eng, c


def say(msg):
    sys.stdout.write(msg + "\n")
    sys.stdout.flush()


def hear():
    line = sys.stdin.readline()
    if not line:
        raise SystemExit("parent went away")
    return line.strip()


def child_main(a):
    dev = torch.device("cuda")
    pid = os.getpid()
    eng, c = child_engine(a.child, dev, a)
    out = {"pid": pid, "kind": a.child, "model": c}
    eng.rec = Recorder()
    if a.lockstep:
        # all requests at iteration 0; the parent says how many iterations to run each round
        ps = prompts(4, 30, 60, 31, min(c["vocab"], 32000))
        reqs = [Req(i, p, 10 ** 6) for i, p in enumerate(ps)]
        say("READY")
        assert hear() == "GO"
        prof_start(a)
        first = True
        while True:
            cmd = hear()
            if cmd == "STOP":
                break
            n = int(cmd.split()[1])
            for _ in range(n):
                eng.step(reqs if first else [])
                first = False
            say("OK")
        prof_stop(a)
        out["requests"] = [{"request": r.id, "prompt_len": r.plen, "output_len": len(r.out)} for r in reqs]
    else:
        seed = 11 if a.child == "moe-graph" else 12
        ps = prompts(8, 30, 160, seed, c["vocab"])
        g = torch.Generator().manual_seed(seed)
        outs = torch.randint(10, 30, (8,), generator=g).tolist()
        arrive = [0, 0, 0, 0, 3, 7, 12, 18] if a.child == "moe-graph" else [0, 0, 0, 2, 5, 9, 14, 20]
        reqs = [Req(i, p, o, arrive=t) for i, (p, o, t) in enumerate(zip(ps, outs, arrive))]
        say("READY")
        assert hear() == "GO"
        prof_start(a)
        t0 = mono()
        run_program(eng, reqs)
        torch.cuda.synchronize()
        out["serve_span_ns"] = [t0, mono()]
        say("DONE")
        assert hear() == "STOP"
        prof_stop(a)
        out["requests"] = req_rows(reqs)
    out["forwards"] = finish(eng.rec.forwards, pid, a.child)
    with open(a.child_truth, "w") as f:
        json.dump(out, f)
    say("BYE")


def spawn(kind, path, lockstep=False):
    cmd = [sys.executable, os.path.abspath(__file__), "--case", "child", "--child", kind, "--child-truth", path]
    if lockstep:
        cmd.append("--lockstep")
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)


def expect(p, word):
    while True:
        line = p.stdout.readline()
        if not line:
            raise SystemExit("child %d ended before %s" % (p.pid, word))
        if line.strip() == word:
            return
        sys.stderr.write("child %d: %s" % (p.pid, line))


def tell(p, msg):
    p.stdin.write(msg + "\n")
    p.stdin.flush()


def merge(truth, parts, procs):
    fws = sorted([f for part in parts for f in part["forwards"]], key=lambda f: f["t_ns"])
    for i, f in enumerate(fws):
        f["i"] = i
    truth["forwards"] = fws
    truth["processes"] = []
    for part, role in zip(parts, procs):
        mine = [f for f in fws if f["pid"] == part["pid"]]
        truth["processes"].append({
            "pid": part["pid"], "role": role, "engine": part["kind"], "model": part["model"],
            "iterations": len(mine), "phases": "".join(f["phase"][0] for f in mine),
            "requests": part["requests"]})
    truth["markers"] = len(fws)
    truth["pids"] = [p["pid"] for p in parts]


def case_two_servers(a, dev, truth):
    tmp = a.truth + ".parts" if a.truth else "/tmp/two-servers.parts"
    paths = [tmp + ".A.json", tmp + ".B.json"]
    ps = [spawn("moe-graph", paths[0]), spawn("mistral-eager", paths[1])]
    for p in ps:
        expect(p, "READY")
    for p in ps:
        tell(p, "GO")
    for p in ps:
        expect(p, "DONE")
    for p in ps:
        tell(p, "STOP")
    for p in ps:
        expect(p, "BYE")
        p.wait()
    parts = [json.load(open(x)) for x in paths]
    merge(truth, parts, ["server A (MoE, graph buckets)", "server B (mistral, eager)"])
    for f in truth["forwards"]:
        f["model"] = "target"
    truth["how"] = ("two engine processes started by one parent (subprocess: fork + exec), both on device 0, each "
                    "serving its own 8 requests, free-running: their iterations interleave and overlap in time; "
                    "between a common barrier, each calls cudaProfilerStart, runs, synchronizes, waits for the "
                    "other to finish, calls cudaProfilerStop")
    truth["counts"] = {p["engine"]: {k: p["phases"].count(k[0]) for k in ("prefill", "mixed", "decode")}
                       for p in truth["processes"]}


def case_draft_target(a, dev, truth, rounds=14, K=3):
    tmp = a.truth + ".parts" if a.truth else "/tmp/draft-target.parts"
    paths = [tmp + ".T.json", tmp + ".D.json"]
    tgt, drf = spawn("moe-graph", paths[0], True), spawn("draft", paths[1], True)
    for p in (tgt, drf):
        expect(p, "READY")
    for p in (tgt, drf):
        tell(p, "GO")
    for r in range(rounds):
        tell(drf, "RUN %d" % (1 if r == 0 else K))  # round 0: the draft's prefill
        expect(drf, "OK")
        tell(tgt, "RUN 1")  # the target's iteration (round 0: its prefill)
        expect(tgt, "OK")
    for p in (tgt, drf):
        tell(p, "STOP")
    for p in (tgt, drf):
        expect(p, "BYE")
        p.wait()
    parts = [json.load(open(x)) for x in paths]
    for f in parts[1]["forwards"]:
        f["model"] = "draft"
    merge(truth, parts, ["target (MoE, graph buckets)", "draft server (1-layer mistral, eager)"])
    truth["how"] = ("two engine processes in lockstep through their parent (pipes): per round the draft server runs "
                    "%d decode iterations of its 4 requests, then the target one iteration of its 4 (round 0: each "
                    "its prefill); the target's iteration is a decode forward of its batch (acceptance is not "
                    "modelled: the pattern of work is what the trace is for)" % K)
    truth["rounds_run"] = rounds
    truth["num_draft_tokens"] = K
    truth["counts"] = {p["engine"]: {k: p["phases"].count(k[0]) for k in ("prefill", "mixed", "decode")}
                       for p in truth["processes"]}


# ------------------------------------------------------------------------------ lifetime (b)

def case_lifetime(a, dev, truth, shards=8, shard_mib=256):
    phases = []

    def phase(name, t0, **kw):
        torch.cuda.synchronize()
        d = {"phase": name, "t0_ns": t0, "t1_ns": mono()}
        d.update(kw)
        phases.append(d)
        return d["t1_ns"]

    t = mono()
    torch.cuda.init()
    torch.empty(1, device=dev)  # the CUDA context
    t = phase("cuda-init", t)
    # weight loading: the model built on the host (as a checkpoint read into host memory), copied to the device
    m_cpu, c = build("mistral", torch.device("cpu"))
    m_cpu = m_cpu.to(torch.bfloat16)
    host = [torch.empty(shard_mib << 19, dtype=torch.bfloat16).fill_(0.01) for _ in range(shards)]
    nbytes = sum(p.numel() * p.element_size() for p in m_cpu.parameters())
    t_copy = mono()
    m = m_cpu.to(dev)
    extra = [h.to(dev) for h in host]
    torch.cuda.synchronize()
    t_copy1 = mono()
    del host, m_cpu
    gc.collect()
    t = phase("load", t, model_bytes=nbytes, shard_bytes=shards * (shard_mib << 20), shards=shards,
              copy_span_ns=[t_copy, t_copy1],
              note="host: model built and initialised on the CPU, 2 GiB of shards filled; then the copies")
    eng = Engine(m, c, dev, a, mode="eager", budget=256, max_seqs=8)
    ew.warm(eng, c["vocab"], n=4, plen=60, new=4)
    t = phase("warm-up", t, note="eager engine iterations (4 requests, prompts 60-90, 4 new tokens), no markers")
    for B in eng.buckets:
        eng.capture_bucket(B)
    eng.mode = "graph"
    t = phase("graph-capture", t, buckets=list(eng.buckets))
    ps = prompts(10, 30, 200, 41, c["vocab"])
    g = torch.Generator().manual_seed(41)
    outs = torch.randint(8, 24, (10,), generator=g).tolist()
    arrive = [0, 0, 0, 0, 4, 8, 12, 16, 20, 24]
    reqs = [Req(i, p, o, arrive=t_) for i, (p, o, t_) in enumerate(zip(ps, outs, arrive))]
    eng.rec = Recorder()
    run_program(eng, reqs)
    t = phase("serve", t, iterations=len(eng.rec.forwards))
    fws = finish(eng.rec.forwards, os.getpid(), "server")
    eng.graphs.clear()
    del eng, extra, m
    gc.collect()
    torch.cuda.empty_cache()
    t = phase("shutdown", t, note="graphs and caches freed, torch.cuda.empty_cache(); the process then exits")
    ew.finish_truth(truth, fws)
    truth["phases"] = phases
    truth["clock"] = ("t0_ns/t1_ns and each forward's t_ns are time.monotonic_ns(); each forward's t_ns is taken right "
                      "after its marker: the trace time of a phase boundary = boundary + (marker start - t_ns)")
    truth.update(family="mistral", model=c, engine=dict(mode="graph", buckets=list((1, 2, 4, 8)), token_budget=256,
                                                         max_seqs=8))
    truth["requests"] = req_rows(reqs)
    truth["counts"] = counts(fws, reqs)
    truth["markers"] = len(fws)


# ------------------------------------------------------------------------------- swap-in (c)

def case_swap_in(a, dev, truth, mode="graph"):
    m, c = build("moe", dev, seed=77)
    eng = Engine(m, c, dev, a, mode=mode, budget=1024, max_seqs=8)
    if mode == "graph":
        for B in eng.buckets:
            eng.capture_bucket(B)
    ew.warm(eng, c["vocab"])
    ps = prompts(8, 40, 120, 51, c["vocab"])
    outs = [40, 36, 34, 38, 30, 32, 36, 40]
    reqs = [Req(i, p, o) for i, (p, o) in enumerate(zip(ps, outs))]
    # (request, swapped out at iteration, swapped in at iteration)
    plan = [(3, 4, 9), (5, 12, 16), (1, 19, 23), (6, 26, 28)]
    L, KV, hd = c["layers"], c["kv_heads"], c["head_dim"]
    dt = m.embed.weight.dtype
    swapped, swaps, pending_free, joining = {}, [], [], []
    state = {"swap_in": None}

    def swap_out(r):
        n = r.computed
        sl_h = torch.tensor([eng.slot(r, p) for p in range(n)], dtype=torch.int64)
        host = torch.empty((L, 2, n, KV, hd), dtype=dt).pin_memory()
        ev = torch.cuda.Event()
        ev.record()
        with torch.cuda.stream(eng.xfer):
            eng.xfer.wait_event(ev)
            sl = sl_h.to(dev, non_blocking=False)
            send = torch.stack([torch.stack([eng.kc[l].index_select(0, sl), eng.vc[l].index_select(0, sl)])
                                for l in range(L)])
            host.copy_(send, non_blocking=True)
            done = torch.cuda.Event()
            done.record()
        pending_free.append((done, list(r.blocks), send))
        r.blocks = []
        swapped[r.id] = host
        return host.numel() * host.element_size()

    def swap_in(r):
        host = swapped.pop(r.id)
        n = r.computed
        eng.ensure_blocks(r, n + 1)
        sl_h = torch.tensor([eng.slot(r, p) for p in range(n)], dtype=torch.int64)
        with torch.cuda.stream(eng.xfer):
            sl = sl_h.to(dev, non_blocking=True)
            stage = host.to(dev, non_blocking=True)
            for l in range(L):
                eng.kc[l].index_copy_(0, sl, stage[l, 0])
                eng.vc[l].index_copy_(0, sl, stage[l, 1])
            ev = torch.cuda.Event()
            ev.record()
        r._stage = (stage, sl, host)
        return ev, host.numel() * host.element_size()

    def issue_swap_in(where):
        if state["swap_in"] is not None:
            r = state["swap_in"]
            ev, nb = swap_in(r)
            swaps.append({"kind": "swap-in", "request": r.id, "iteration": eng.it, "tokens": r.computed,
                          "bytes": nb, "stream": "side", "issued": where, "joins_iteration": eng.it + 1})
            joining.append((r, ev))
            state["swap_in"] = None

    if mode == "graph":
        orig = eng.forward_graph

        def forward_graph(batch):
            out = orig(batch)  # the replay is launched: the swap-in overlaps it on the side stream
            issue_swap_in("after the iteration's graph replay launch")
            return out
        eng.forward_graph = forward_graph
    else:
        # eager: from a hook after layer 1's launches, so the copy overlaps layers 2.. of the forward
        m.layers[1].register_forward_hook(lambda mod, args, out: issue_swap_in(
            "inside the iteration's eager forward, after layer 1's launches"))
    eng.rec = Recorder()
    prof_start(a)
    t0 = time.time()
    pending = list(reqs)
    while pending or eng.running or eng.waiting or swapped or joining:
        arr = []
        for r, ev in joining:
            torch.cuda.current_stream().wait_event(ev)
            arr.append(r)
        joining.clear()
        for ev, blocks, send in pending_free:
            ev.synchronize()
            eng.free.extend(blocks)
        pending_free.clear()
        arr += pending
        pending = []
        it = eng.it
        for rid, o, i in plan:
            r = reqs[rid]
            if o == it and r in eng.running and not r.done:
                eng.running.remove(r)
                nb = swap_out(r)
                swaps.append({"kind": "swap-out", "request": rid, "iteration": it, "tokens": r.computed, "bytes": nb,
                              "stream": "side", "issued": "before the iteration's marker (after the previous one)"})
            if i == it and rid in swapped:
                state["swap_in"] = r
        fw = eng.step(arr)
        if state["swap_in"] is not None:
            raise SystemExit("swap-in planned in iteration %d was not issued" % it)
        if fw is None:
            eng.it += 1
    prof_stop(a)
    truth["measured_wall_s"] = round(time.time() - t0, 3)
    fws = eng.rec.forwards
    bys = {s["iteration"]: s for s in swaps if s["kind"] == "swap-in"}
    for f in fws:
        if f["iteration"] in bys:
            f["swap_in"] = bys[f["iteration"]]
    assert all(f["phase"] == "decode" for f in fws[1:]), [f["phase"] for f in fws]
    ew.finish_truth(truth, finish(fws, os.getpid(), "server"))
    truth.update(family="moe", model=c, engine=dict(mode=mode, buckets=list(eng.buckets) if mode == "graph" else None,
                                                     token_budget=1024, max_seqs=8, block_size=eng.bs))
    truth["swaps"] = swaps
    truth["swap_note"] = ("swap-out: issued between iterations (the marker of the next iteration follows): an "
                          "index_select gather of the request's K and V per layer + one device-to-host copy to pinned "
                          "memory, on the side stream; swap-in: in the iteration named, right after its graph replay "
                          "was launched (swap-in-eager: from a forward hook after layer 1's launches): slot indices and the KV copied host to device + index_copy_ per layer and "
                          "K/V on the side stream, overlapping the replay; the request rejoins the next iteration "
                          "(the compute stream waits on the side stream's event)")
    truth["requests"] = req_rows(reqs)
    truth["counts"] = counts(fws, reqs)
    truth["markers"] = len(fws)


# ---------------------------------------------------------------------------------- mixed (d)

def case_mixed(a, dev, truth, mode):
    m, c = build("mistral", dev, seed=5)
    eng = Engine(m, c, dev, a, mode=mode, budget=128, max_seqs=8, tok_buckets=(16, 32, 64, 128))
    for B in eng.buckets:
        eng.capture_bucket(B)
    if mode == "piecewise":
        for Tb in eng.tok_buckets:
            eng.capture_pieces(Tb)
    ew.warm(eng, c["vocab"])
    n = 14
    ps = prompts(n, 19, 110, 61, c["vocab"])
    g = torch.Generator().manual_seed(61)
    outs = torch.randint(14, 30, (n,), generator=g).tolist()
    arrive = [0, 0, 1, 2, 3, 4, 5, 6, 11, 16, 21, 26, 31, 36]
    reqs = [Req(i, p, o, arrive=t) for i, (p, o, t) in enumerate(zip(ps, outs, arrive))]
    eng.rec = Recorder()
    prof_start(a)
    t0 = time.time()
    run_program(eng, reqs)
    prof_stop(a)
    truth["measured_wall_s"] = round(time.time() - t0, 3)
    fws = eng.rec.forwards
    for f in fws:
        f["attention_calls_per_layer"] = (1 if f["decode_tokens"] else 0) + len(f["prompt_chunk_tokens"])
    ew.finish_truth(truth, finish(fws, os.getpid(), "server"))
    truth.update(family="mistral", model=c, engine=dict(mode=mode, buckets=list(eng.buckets), token_budget=128,
                                                         max_seqs=8, block_size=eng.bs,
                                                         token_buckets=list(eng.tok_buckets) if mode == "piecewise" else None))
    truth["requests"] = req_rows(reqs)
    truth["counts"] = counts(fws, reqs)
    truth["markers"] = len(fws)


# ---------------------------------------------------------------------------- graph-level (e)

def case_graph_level(a, dev, truth, decode_only=False):
    m, c = build("moe", dev, seed=91)
    eng = Engine(m, c, dev, a, mode="graph", budget=1024, max_seqs=8)
    for B in eng.buckets:
        eng.capture_bucket(B)
    ew.warm(eng, c["vocab"])
    ps = prompts(8, 60, 100, 71, c["vocab"])
    reqs = [Req(i, p, 16 if not decode_only else 14) for i, p in enumerate(ps)]
    if decode_only:  # the prefill iteration before the window: it opens on a decoding engine
        eng.step(reqs)
        reqs_run = []
    else:
        reqs_run = reqs
    eng.rec = Recorder()
    prof_start(a)
    t0 = time.time()
    run_program(eng, reqs_run)
    prof_stop(a)
    truth["measured_wall_s"] = round(time.time() - t0, 3)
    fws = eng.rec.forwards
    ew.finish_truth(truth, finish(fws, os.getpid(), "server"))
    truth.update(family="moe", model=c, engine=dict(mode="graph", buckets=list(eng.buckets), token_budget=1024,
                                                     max_seqs=8, block_size=eng.bs),
                 nsys_cuda_graph_trace="graph",
                 window=("opened after the prefill iteration (iteration 0, untraced): every traced iteration a decode "
                         "replay" if decode_only else "opened before the prefill iteration"))
    truth["requests"] = req_rows(reqs)
    truth["counts"] = counts(fws, reqs)
    truth["graph_replays"] = sum(1 for f in fws if f["graph"] == "replay")
    truth["markers"] = len(fws)


# --------------------------------------------------------------------------- not inference (f)

class TrainModel(nn.Module):
    def __init__(self, vocab=8192, d=512, layers=4, heads=8):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        lay = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.1, activation="gelu", batch_first=True,
                                         norm_first=True)
        self.body = nn.TransformerEncoder(lay, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, x):
        T = x.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(T, device=x.device)
        return self.head(self.norm(self.body(self.emb(x), mask=mask, is_causal=True)))


def case_train(a, dev, truth, steps=10, warm=2):
    torch.manual_seed(3)
    vocab, B, T = 8192, 8, 256
    m = TrainModel(vocab).to(dev)
    opt = torch.optim.AdamW(m.parameters(), lr=3e-4, weight_decay=0.1)
    data = torch.randint(0, vocab, (steps + warm, B, T + 1), device=dev)
    rows = []

    def step(i, mark):
        if mark:
            torch.cuda.mem_get_info()  # marker: the start of a training step (test scaffolding)
        t = mono()
        x, y = data[i, :, :-1], data[i, :, 1:]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = m(x)
            loss = F.cross_entropy(logits.float().view(-1, vocab), y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        v = loss.item()  # the read-back of the loss every step
        return {"step": i - warm, "t_ns": t, "loss": round(v, 4), "tokens": B * T, "model": "train", "phase": "train",
                "pid": os.getpid()}
    for i in range(warm):
        step(i, False)
    prof_start(a)
    for i in range(warm, warm + steps):
        rows.append(step(i, True))
    prof_stop(a)
    truth["trace_kind"] = "training"
    truth["training_steps"] = rows
    truth["forwards"] = rows
    truth["model"] = {"kind": "nn.TransformerEncoder, pre-norm, causal mask", "vocab": vocab, "d_model": 512,
                      "layers": 4, "heads": 8, "ffn": 2048, "params": sum(p.numel() for p in m.parameters())}
    truth["train"] = {"batch": B, "seq": T, "optimizer": "AdamW (foreach)", "autocast": "bf16", "grad_clip": 1.0,
                      "dropout": 0.1, "warm_up_steps_before_window": warm}
    truth["counts"] = {"training_steps": steps, "forwards": 0, "decode": 0, "prefill": 0, "mixed": 0}
    truth["markers"] = steps


def case_load(a, dev, truth, shards=12, shard_mib=256):
    host = [torch.empty(shard_mib << 19, dtype=torch.bfloat16).fill_(0.001 * i) for i in range(shards)]
    f32 = torch.empty(shard_mib << 18, dtype=torch.float32).fill_(0.5)
    copies = []
    torch.empty(1, device=dev)
    prof_start(a)
    dst = []
    for i, h in enumerate(host):
        t = mono()
        dst.append(h.to(dev))
        copies.append({"shard": i, "bytes": h.numel() * 2, "dtype": "bf16", "host": "pageable", "t_ns": t})
    t = mono()
    d32 = f32.to(dev)
    copies.append({"shard": shards, "bytes": f32.numel() * 4, "dtype": "fp32", "host": "pageable", "t_ns": t,
                   "then": "converted to bf16 on the device"})
    d16 = d32.to(torch.bfloat16)
    dst.append(d16)
    del d32
    torch.cuda.synchronize()
    prof_stop(a)
    truth["trace_kind"] = "loading"
    truth["copies"] = copies
    truth["forwards"] = []
    truth["h2d_bytes"] = sum(c["bytes"] for c in copies)
    truth["kernels_note"] = "one fp32->bf16 conversion kernel (the last shard), nothing else launched by the loader"
    truth["counts"] = {"forwards": 0, "decode": 0, "prefill": 0, "mixed": 0, "h2d_copies": len(copies)}
    truth["markers"] = 0


CASES = {
    "two-servers": case_two_servers,
    "draft-target": case_draft_target,
    "lifetime": case_lifetime,
    "swap-in": case_swap_in,
    "swap-in-eager": lambda a, d, t: case_swap_in(a, d, t, "eager"),
    "mixed-eager": lambda a, d, t: case_mixed(a, d, t, "graph"),
    "mixed-piecewise": lambda a, d, t: case_mixed(a, d, t, "piecewise"),
    "graph-level": case_graph_level,
    "graph-level-decode": lambda a, d, t: case_graph_level(a, d, t, decode_only=True),
    "train": case_train,
    "load": case_load,
}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--case", required=True, choices=sorted(CASES) + ["child"])
    p.add_argument("--name", default=None)
    p.add_argument("--truth", help="write the ground-truth JSON here")
    p.add_argument("--probe", action="store_true", help="no cudaProfilerStart/Stop")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--child-truth", help=argparse.SUPPRESS)
    p.add_argument("--lockstep", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    dev = torch.device("cuda")
    if a.case == "child":
        with torch.inference_mode():
            child_main(a)
        return
    truth = {"name": a.name or a.case, "case": a.case, "probe": a.probe, "marker": True, "marker_note": NOTE,
             "workload": "testdata/capture/classes_workload.py", "torch": torch.__version__,
             "device": "NVIDIA H200", "pid": os.getpid()}
    t0 = time.time()
    if a.case in ("train",):
        CASES[a.case](a, dev, truth)
    elif a.case in ("two-servers", "draft-target"):
        CASES[a.case](a, dev, truth)
    else:
        with torch.inference_mode():
            CASES[a.case](a, dev, truth)
    truth["wall_s"] = round(time.time() - t0, 2)
    if a.case not in ("two-servers", "draft-target"):  # the parent of those never touches CUDA
        truth["device"] = torch.cuda.get_device_name(0)
    if a.truth:
        with open(a.truth, "w") as f:
            f.write(json.dumps(truth, indent=1) + "\n")
    summ = {k: truth.get(k) for k in ("name", "counts", "markers", "measured_wall_s")}
    summ["phases"] = "".join(f["phase"][0] if f.get("model") == "target" else "d" for f in truth["forwards"])
    print(json.dumps({"workload": summ}))


if __name__ == "__main__":
    main()
