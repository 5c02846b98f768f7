#!/usr/bin/env python3
"""Small serving-engine loops in plain PyTorch, captured under nsys (issue 30, situations 1-10).

No vLLM or SGLang exists on the GPU machine; their loop is small enough to write here, and the
traces it gives are real: a scheduler that admits requests each iteration, a paged KV cache (block
tables, slot mappings), decode tokens first and prompt chunks up to a token budget (chunked prefill:
mixed batches), the lm_head and a sampler (temperature, top-k, top-p, exponential race) after the
model, the sampled tokens read back to the host every iteration (one device-to-host copy). Models
are random-weight bf16 decoders of four families written here (none of testdata's):

  mistral  GQA (16 q / 4 kv heads x 64), SwiGLU, RMSNorm, vocab 32768
  gemma    MQA (4 q / 1 kv head x 256), GeGLU (tanh), (1+w) RMSNorm, sqrt(d) embedding scale,
           tied lm_head, vocab 49152
  phi2     parallel attention + MLP block, LayerNorm with bias, GELU MLP (fc1/fc2), partial rotary
           (half the head), biased projections and lm_head, vocab 51200
  moe      GQA (12 q / 4 kv x 64), 8 experts top-2 as batched GEMMs (every expert on every token,
           weighted by the router's combine matrix: static shapes, graph-capturable), vocab 32000

Cases (--case; each writes the ground truth with --truth):
  eager-cb        1: eager engine, chunked prefill, mixed batches, 30 requests arriving over time
  graph-buckets   2: decode-only iterations replay one CUDA graph per batch bucket (1,2,4,8; padded),
                  prompt-holding iterations eager; graphs captured at start-up, before the window
  lazy-capture    3: graphs captured lazily, inside the window, the first time a bucket is needed
  window          4: eager engine; cudaProfilerStart from a forward hook after layer 2 of iteration
                  k, cudaProfilerStop from a hook after layer 1 of a later iteration: the trace
                  starts and ends mid-forward and holds no prefill
  bench           5: a benchmark loop: the same short program (4 requests, 2 new tokens each) six
                  times, a 20 ms host pause between runs
  repeat          5: the same program (6 requests, prompts 60-200, 8-14 new tokens) run three times,
                  a 50 ms host pause between runs
  disagg-prefill  7: prefill-only worker: prompt chunks, each request's KV pages exported after its
                  prefill (gathered and copied to pinned host memory on a transfer stream), never a
                  decode; two waves of requests with an idle pause between them
  disagg-decode   7: decode-only worker: requests arrive with their KV copied in on a transfer stream
                  (host to device, scattered into the paged cache), every iteration one graph replay
                  of its batch bucket as the batch grows and shrinks
  nvtx-vllm       8: vLLM's per-iteration range as the GPU worker writes it with the CUDA profiler
                  (Worker.annotate_profile): "execute_context_C(c)_generation_G(g)" around
                  execute_model (inputs, forward, lm_head); sample_tokens (sampler, read-back) after it
  nvtx-vllm-detailed  8: the same with detailed_trace_annotation:
                  "execute_T_context_C(sq..sk..sqsq..sqsk..)_generation_G(sq..sk..sqsq..sqsk..)"
  nvtx-sglang     8: SGLang's scheduler ranges (SGLANG_ENABLE_NVTX_SCHEDULER) in its normal event
                  loop: scheduler.recv_requests, .process_input_requests, .get_next_batch_to_run,
                  .run_batch (forward, lm_head, sampling), .process_batch_result (read-back);
                  prefill (extend) batches eager and alone, decode batches replay CUDA graphs
  piecewise       9: vLLM V1 style: prompt-holding iterations replay graph pieces (one per layer
                  boundary, padded to a token bucket) with attention eager between them, lm_head
                  eager; decode-only iterations replay one full graph per batch bucket
  eagle          10: EAGLE-style speculative decoding: a 1-layer draft head (fc over [embedding;
                  target hidden] + one decoder layer + the target's lm_head) runs K=3 draft forwards
                  per round, then the target verifies the 4 tokens of every request; every draft
                  forward and every verify is a CUDA graph replay; the window ends after the last
                  round's draft forwards, before its verify

Ground-truth marker (test scaffolding, not a serving signal): one torch.cuda.mem_get_info()
(cudaMemGetInfo: no GPU work, no sync) at the start of every engine iteration (eagle: of every
forward), before its inputs are copied. The analyzer must give the same answer with those rows deleted.
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

FAMILIES = {
    "mistral": dict(layers=4, hidden=1024, heads=16, kv_heads=4, head_dim=64, ffn=2816, act="silu_glu",
                    norm="rms", vocab=32768),
    "gemma": dict(layers=4, hidden=768, heads=4, kv_heads=1, head_dim=256, ffn=3072, act="gelu_glu",
                  norm="gemma_rms", vocab=49152, tied=True, emb_scale=True),
    "phi2": dict(layers=4, hidden=1024, heads=16, kv_heads=16, head_dim=64, ffn=4096, act="gelu",
                 norm="ln", vocab=51200, parallel=True, bias=True, rot_frac=0.5),
    "moe": dict(layers=4, hidden=768, heads=12, kv_heads=4, head_dim=64, ffn=1024, act="silu_glu",
                norm="rms", vocab=32000, experts=8, top_k=2),
}
DEFAULTS = dict(tied=False, emb_scale=False, parallel=False, bias=False, rot_frac=1.0, experts=0, top_k=0)

SDPA = getattr(F, "scaled_dot_product_attention", None)


def log(*a):
    print("[engine_workload]", *a, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------- model

class Norm(nn.Module):
    def __init__(self, kind, d):
        super().__init__()
        self.kind = kind
        self.w = nn.Parameter(torch.zeros(d) if kind == "gemma_rms" else torch.ones(d))
        self.b = nn.Parameter(torch.zeros(d)) if kind == "ln" else None

    def forward(self, x):
        if self.kind == "ln":
            return F.layer_norm(x, x.shape[-1:], self.w, self.b, 1e-5)
        w = self.w + 1 if self.kind == "gemma_rms" else self.w
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
        return (xf * w.float()).to(x.dtype)


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.act, self.E, self.k = c["act"], c["experts"], c["top_k"]
        h, f = c["hidden"], c["ffn"]
        if self.E:
            self.router = nn.Linear(h, self.E, bias=False)
            self.w1 = nn.Parameter(torch.randn(self.E, h, 2 * f) * 0.02)
            self.w2 = nn.Parameter(torch.randn(self.E, f, h) * 0.02)
        elif self.act == "gelu":
            self.fc1 = nn.Linear(h, f, bias=c["bias"])
            self.fc2 = nn.Linear(f, h, bias=c["bias"])
        else:
            self.gate_up = nn.Linear(h, 2 * f, bias=False)
            self.down = nn.Linear(f, h, bias=False)

    def glu(self, y):
        g, u = y.chunk(2, dim=-1)
        return (F.silu(g) if self.act == "silu_glu" else F.gelu(g, approximate="tanh")) * u

    def forward(self, x):
        if self.E:
            T = x.shape[0]
            p = self.router(x).float().softmax(-1)
            w, idx = p.topk(self.k, dim=-1)
            w = w / w.sum(-1, keepdim=True)
            comb = torch.zeros(T, self.E, device=x.device, dtype=torch.float32).scatter_(1, idx, w)
            y = torch.bmm(x.unsqueeze(0).expand(self.E, T, x.shape[1]), self.w1)
            y = torch.bmm(self.glu(y), self.w2)
            return (y * comb.t().unsqueeze(-1).to(y.dtype)).sum(0)
        if self.act == "gelu":
            return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))
        return self.down(self.glu(self.gate_up(x)))


class Layer(nn.Module):
    def __init__(self, c, idx):
        super().__init__()
        self.idx, self.c = idx, c
        self.H, self.KV, self.hd = c["heads"], c["kv_heads"], c["head_dim"]
        self.rot = int(self.hd * c["rot_frac"])
        self.norm1 = Norm(c["norm"], c["hidden"])
        self.qkv = nn.Linear(c["hidden"], (self.H + 2 * self.KV) * self.hd, bias=c["bias"])
        self.o = nn.Linear(self.H * self.hd, c["hidden"], bias=c["bias"])
        self.norm2 = None if c["parallel"] else Norm(c["norm"], c["hidden"])
        self.mlp = MLP(c)
        self.attn_fn = None  # set per call by Model.hidden (forward hooks see the module call)

    def rope(self, t, cos, sin):
        r = self.rot
        tr = t[..., :r]
        a, b = tr[..., : r // 2], tr[..., r // 2:]
        out = torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)
        return out if r == self.hd else torch.cat([out, t[..., r:]], dim=-1)

    def pre(self, h, cos, sin):
        x = self.norm1(h)
        T = x.shape[0]
        q, k, v = self.qkv(x).split([self.H * self.hd, self.KV * self.hd, self.KV * self.hd], dim=-1)
        q = self.rope(q.view(T, self.H, self.hd), cos, sin)
        k = self.rope(k.view(T, self.KV, self.hd), cos, sin)
        return q, k, v.view(T, self.KV, self.hd), x

    def post(self, a, h, x):
        out = self.o(a)
        if self.norm2 is None:
            return h + out + self.mlp(x)
        h = h + out
        return h + self.mlp(self.norm2(h))

    def forward(self, h, cos, sin):
        q, k, v, x = self.pre(h, cos, sin)
        return self.post(self.attn_fn(self.idx, q, k, v), h, x)


class Model(nn.Module):
    def __init__(self, c, max_pos=4096):
        super().__init__()
        self.c = c
        self.embed = nn.Embedding(c["vocab"], c["hidden"])
        nn.init.normal_(self.embed.weight, std=0.02)
        self.layers = nn.ModuleList([Layer(c, i) for i in range(c["layers"])])
        self.norm = Norm(c["norm"], c["hidden"])
        self.lm_head = None if c["tied"] else nn.Linear(c["hidden"], c["vocab"], bias=c["bias"])
        rot = int(c["head_dim"] * c["rot_frac"])
        inv = 1.0 / (10000 ** (torch.arange(0, rot, 2).float() / rot))
        f = torch.outer(torch.arange(max_pos).float(), inv)
        self.register_buffer("cos_t", f.cos(), persistent=False)
        self.register_buffer("sin_t", f.sin(), persistent=False)

    def cos_sin(self, pos):
        dt = self.embed.weight.dtype
        return self.cos_t[pos].unsqueeze(1).to(dt), self.sin_t[pos].unsqueeze(1).to(dt)

    def emb(self, tok):
        h = self.embed(tok)
        return h * math.sqrt(self.c["hidden"]) if self.c["emb_scale"] else h

    def hidden(self, tok, pos, attn, h=None):
        cos, sin = self.cos_sin(pos)
        h = self.emb(tok) if h is None else h
        for layer in self.layers:
            layer.attn_fn = attn
            h = layer(h, cos, sin)
        return self.norm(h)

    def logits(self, h):
        if self.lm_head is None:
            return F.linear(h, self.embed.weight)
        return self.lm_head(h)


TINY = False  # --cpu: shrink the widths (the logic, not the shapes, is what a CPU check tests)


def build(family, dev, seed=1234, **over):
    c = dict(DEFAULTS)
    c.update(FAMILIES[family])
    c.update(over)
    if TINY:
        c.update(hidden=64, ffn=128, vocab=512, head_dim=16 if c["head_dim"] < 256 else 32)
    torch.manual_seed(seed)
    m = Model(c)
    for n, p in m.named_parameters():
        if p.dim() >= 2 and "embed" not in n and not n.endswith(".w1") and not n.endswith(".w2"):
            nn.init.normal_(p, std=0.02)
    dt = torch.bfloat16 if dev.type == "cuda" else torch.float32
    return m.to(dev, dt).eval(), c


# ------------------------------------------------------------------------------------- attention

def attend(q, k, v, mask=None, causal=False):
    """q [N, Tq, H, hd], k/v [N, Tk, KV, hd]; mask [N or 1, 1, Tq, Tk] bool (True = attend)."""
    H, KV = q.shape[2], k.shape[2]
    if KV != H:
        k = k.repeat_interleave(H // KV, dim=2)
        v = v.repeat_interleave(H // KV, dim=2)
    q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    if SDPA is not None:
        o = SDPA(q, k, v, attn_mask=mask, is_causal=causal)
    else:  # CPU check without torch 2 (the GPU image has torch 2.11)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        if causal:
            mask = torch.ones(s.shape[-2], s.shape[-1], dtype=torch.bool, device=s.device).tril()
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        o = s.softmax(-1) @ v
    return o.transpose(1, 2)


class Req:
    def __init__(self, rid, prompt, max_new, arrive=0, wave=0):
        self.id, self.prompt, self.max_new, self.arrive, self.wave = rid, prompt, max_new, arrive, wave
        self.computed = 0
        self.out = []
        self.blocks = []
        self.done = False
        self.first_iter = None
        self.last_iter = None

    @property
    def plen(self):
        return len(self.prompt)

    def prefilling(self):
        return self.computed < self.plen

    def token_at(self, p):
        return self.prompt[p] if p < self.plen else self.out[p - self.plen]


# ---------------------------------------------------------------------------------------- engine

class Engine:
    def __init__(self, model, c, dev, a, mode="eager", sched="vllm", nvtx=None, buckets=(1, 2, 4, 8),
                 tok_buckets=(16, 32, 64, 128, 256), budget=256, max_seqs=16, block=16, num_blocks=1024,
                 max_len=512, role="both"):
        self.m, self.c, self.dev, self.a = model, c, dev, a
        self.mode, self.sched, self.nvtx, self.role = mode, sched, nvtx, role
        self.buckets, self.tok_buckets = buckets, tok_buckets
        self.budget, self.max_seqs, self.bs, self.max_len = budget, max_seqs, block, max_len
        self.maxb = max_len // block
        self.cuda = dev.type == "cuda"
        KV, hd = c["kv_heads"], c["head_dim"]
        dt = model.embed.weight.dtype
        self.kc = [torch.zeros(num_blocks * block, KV, hd, device=dev, dtype=dt) for _ in range(c["layers"])]
        self.vc = [torch.zeros(num_blocks * block, KV, hd, device=dev, dtype=dt) for _ in range(c["layers"])]
        self.num_blocks = num_blocks
        # a ring of pinned staging buffers, each reused only after its last copy completed
        self.pins = [torch.zeros(1 << 18, dtype=torch.int64) for _ in range(8)]
        if self.cuda:
            self.pins = [x.pin_memory() for x in self.pins]
        self.pin_ev = [torch.cuda.Event() if self.cuda else None for _ in self.pins]
        self.pin_used = [False] * len(self.pins)
        self.pin_i = 0
        self.dbuf = torch.zeros(1 << 20, dtype=torch.int64, device=dev)
        self.graphs = {}       # bucket -> (graph, static meta buffer, views, logits out)
        self.pieces = {}       # token bucket -> piecewise state
        self.xfer = torch.cuda.Stream() if self.cuda else None
        self.rec = None
        self.g = torch.Generator(device=dev)
        self.g.manual_seed(7)
        self.reset()

    def reset(self, keep_it=False):
        self.free = list(range(1, self.num_blocks))  # block 0: the padding slots of graph buckets
        self.waiting, self.running, self.finished = [], [], []
        if not keep_it:
            self.it = 0
        self.pending_exports = []
        self.imports = []
        self.exports = []

    # ---- blocks and slots
    def ensure_blocks(self, r, upto):
        need = (upto + self.bs - 1) // self.bs
        while len(r.blocks) < need:
            r.blocks.append(self.free.pop(0))

    def slot(self, r, p):
        return r.blocks[p // self.bs] * self.bs + p % self.bs

    def release(self, r):
        self.free.extend(r.blocks)
        r.blocks = []

    # ---- metadata: one packed int64 host buffer, one H2D copy per forward (vLLM's persistent buffers)
    def upload(self, parts, dst=None):
        flat = []
        offs = {}
        for name, vals in parts:
            offs[name] = (len(flat), len(vals))
            flat.extend(vals)
        n = len(flat)
        i = self.pin_i
        self.pin_i = (i + 1) % len(self.pins)
        if self.cuda and self.pin_used[i]:
            self.pin_ev[i].synchronize()
        pin = self.pins[i]
        pin[:n].copy_(torch.tensor(flat, dtype=torch.int64))
        dst = self.dbuf if dst is None else dst
        dst[:n].copy_(pin[:n], non_blocking=True)
        if self.cuda:
            self.pin_ev[i].record()
            self.pin_used[i] = True
        return {k: dst[o:o + l] for k, (o, l) in offs.items()}

    # ---- scheduling
    def admit(self, arrivals):
        for r in arrivals:
            self.waiting.append(r)
        while self.waiting and len(self.running) < self.max_seqs:
            self.running.append(self.waiting.pop(0))

    def schedule(self):
        """vLLM: decode tokens first, then prompt chunks FIFO up to the token budget.
        sglang: a prefill (extend) batch of prompt chunks alone while prompts wait, else decode."""
        batch, room = [], self.budget
        dec = [r for r in self.running if not r.prefilling()]
        pre = [r for r in self.running if r.prefilling()]
        if self.sched == "sglang" and pre:
            dec = []
        if self.role == "prefill":
            dec = []
        for r in dec:
            batch.append((r, 1, r.computed))
            room -= 1
        for r in pre:
            if room <= 0:
                break
            n = min(r.plen - r.computed, room)
            batch.append((r, n, r.computed))
            room -= n
        return batch

    # ---- the forward of one iteration
    def build_meta(self, batch):
        toks, pos, slots = [], [], []
        dec = [(r, n, s) for r, n, s in batch if not (s < r.plen)]
        chunks = [(r, n, s) for r, n, s in batch if s < r.plen]
        for r, n, s in batch:
            self.ensure_blocks(r, s + n)
            for p in range(s, s + n):
                toks.append(r.token_at(p))
                pos.append(p)
                slots.append(self.slot(r, p))
        D = len(dec)
        L = 0
        gsl, lens = [], []
        if D:
            L = max(s + 1 for _, _, s in dec)
            L = (L + self.bs - 1) // self.bs * self.bs
            for r, n, s in dec:
                row = [self.slot(r, p) for p in range(s + 1)]
                gsl.extend(row + [0] * (L - len(row)))
                lens.append(s + 1)
        parts = [("tok", toks), ("pos", pos), ("slot", slots), ("gsl", gsl), ("lens", lens),
                 ("rows", self.logit_rows(batch))]
        cinfo = []
        for i, (r, n, s) in enumerate(chunks):
            if s > 0:
                parts.append(("c%d" % i, [self.slot(r, p) for p in range(s + n)]))
            cinfo.append((n, s))
        meta = self.upload(parts)
        meta["D"], meta["L"], meta["chunks"] = D, L, cinfo
        if D:
            meta["dmask"] = (torch.arange(L, device=self.dev)[None, :] < meta["lens"][:, None]).view(D, 1, 1, L)
        for i, (n, s) in enumerate(cinfo):
            if s > 0:
                meta["cm%d" % i] = torch.ones(n, s + n, dtype=torch.bool, device=self.dev).tril(s).view(1, 1, n, s + n)
        return meta

    def attn_eager(self, meta):
        KV, hd = self.c["kv_heads"], self.c["head_dim"]

        def f(l, q, k, v):
            kc, vc = self.kc[l], self.vc[l]
            T = q.shape[0]
            kc.index_copy_(0, meta["slot"][:T], k)
            vc.index_copy_(0, meta["slot"][:T], v)
            outs = []
            D, L = meta["D"], meta["L"]
            if D:
                K = kc[meta["gsl"]].view(D, L, KV, hd)
                V = vc[meta["gsl"]].view(D, L, KV, hd)
                outs.append(attend(q[:D].unsqueeze(1), K, V, mask=meta["dmask"]).reshape(D, -1))
            off = D
            for i, (n, s) in enumerate(meta["chunks"]):
                qc = q[off:off + n].unsqueeze(0)
                if s == 0:
                    o = attend(qc, k[off:off + n].unsqueeze(0), v[off:off + n].unsqueeze(0), causal=True)
                else:
                    o = attend(qc, kc[meta["c%d" % i]].unsqueeze(0), vc[meta["c%d" % i]].unsqueeze(0),
                               mask=meta["cm%d" % i])
                outs.append(o.reshape(n, -1))
                off += n
            return outs[0] if len(outs) == 1 else torch.cat(outs)
        return f

    def logit_rows(self, batch):
        rows, off = [], 0
        for r, n, s in batch:
            off += n
            rows.append(off - 1)
        return rows

    def forward_eager(self, batch, hook=None):
        meta = self.build_meta(batch)
        h = self.m.hidden(meta["tok"], meta["pos"], self.attn_eager(meta))
        # decode tokens come first, one row each; the last token of each chunk after them
        return self.m.logits(h.index_select(0, meta["rows"]))

    # ---- full CUDA graphs per decode batch bucket
    def bucket(self, n, sizes):
        for b in sizes:
            if n <= b:
                return b
        return None

    def graph_layout(self, B):
        L = self.max_len
        return [("tok", B), ("pos", B), ("slot", B), ("gsl", B * L), ("lens", B)]

    def graph_fn(self, B, views):
        KV, hd, L = self.c["kv_heads"], self.c["head_dim"], self.max_len

        def attn(l, q, k, v):
            self.kc[l].index_copy_(0, views["slot"], k)
            self.vc[l].index_copy_(0, views["slot"], v)
            K = self.kc[l][views["gsl"]].view(B, L, KV, hd)
            V = self.vc[l][views["gsl"]].view(B, L, KV, hd)
            return attend(q.unsqueeze(1), K, V, mask=views["mask"]).reshape(B, -1)

        def run():
            views["mask"] = (torch.arange(L, device=self.dev)[None, :] < views["lens"][:, None]).view(B, 1, 1, L)
            h = self.m.hidden(views["tok"], views["pos"], attn)
            return self.m.logits(h)
        return run

    def capture(self, fn, warm=1):
        if not self.cuda:
            return None, fn()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(warm):
                fn()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = fn()
        return g, out

    def capture_bucket(self, B):
        n = sum(x for _, x in self.graph_layout(B))
        buf = torch.zeros(n, dtype=torch.int64, device=self.dev)
        views, o = {}, 0
        for name, l in self.graph_layout(B):
            views[name] = buf[o:o + l]
            o += l
        views["lens"].fill_(1)
        fn = self.graph_fn(B, views)
        g, out = self.capture(fn)
        self.graphs[B] = (g, buf, views, out, fn)

    def fill_bucket(self, B, batch):
        L = self.max_len
        tok, pos, slot, gsl, lens = [], [], [], [], []
        for r, n, s in batch:
            self.ensure_blocks(r, s + 1)
            tok.append(r.token_at(s))
            pos.append(s)
            slot.append(self.slot(r, s))
            row = [self.slot(r, p) for p in range(s + 1)]
            gsl.extend(row + [0] * (L - len(row)))
            lens.append(s + 1)
        pad = B - len(batch)
        tok += [0] * pad
        pos += [0] * pad
        slot += [0] * pad
        gsl += [0] * (L * pad)
        lens += [1] * pad
        g, buf, views, out, fn = self.graphs[B]
        self.upload([("tok", tok), ("pos", pos), ("slot", slot), ("gsl", gsl), ("lens", lens)], dst=buf)

    def forward_graph(self, batch):
        """Returns (logits, how): how = replay | capture."""
        B = self.bucket(len(batch), self.buckets)
        how = "replay"
        if B not in self.graphs:
            # lazy: warm-up run + capture + instantiate, inside this iteration
            self.capture_bucket(B)
            how = "capture"
        self.fill_bucket(B, batch)
        g, buf, views, out, fn = self.graphs[B]
        if g is None:
            out = fn()
        else:
            g.replay()
        return out[: len(batch)], how, B

    # ---- piecewise graphs (vLLM V1): graph pieces between attentions, padded to a token bucket
    def capture_pieces(self, Tb):
        m, Lr = self.m, self.m.layers
        buf = torch.zeros(2 * Tb, dtype=torch.int64, device=self.dev)
        tok, pos = buf[:Tb], buf[Tb:]
        H, hd = self.c["heads"], self.c["head_dim"]
        a_buf = torch.zeros(Tb, H * hd, device=self.dev, dtype=m.embed.weight.dtype)
        st = {"buf": buf, "tok": tok, "pos": pos, "a": a_buf, "graphs": [], "outs": []}

        # piece 0: embedding + layer 0 up to attention; the outputs (q, k, v, x, h) feed attention
        def mk(j, prev):
            def fn():
                cos, sin = m.cos_sin(pos)
                h = Lr[j - 1].post(a_buf, prev[4], prev[3])
                if j == len(Lr):
                    return (m.norm(h),)
                return Lr[j].pre(h, cos, sin) + (h,)
            return fn

        def p0():
            cos, sin = m.cos_sin(pos)
            h = m.emb(tok)
            return Lr[0].pre(h, cos, sin) + (h,)
        g, out = self.capture(p0)
        st["graphs"].append((g, p0))
        st["outs"].append(out)
        for j in range(1, len(Lr) + 1):
            fn = mk(j, st["outs"][-1])
            g, out = self.capture(fn)
            st["graphs"].append((g, fn))
            st["outs"].append(out)
        self.pieces[Tb] = st

    def forward_piecewise(self, batch):
        meta = self.build_meta(batch)
        T = sum(n for _, n, _ in batch)
        Tb = self.bucket(T, self.tok_buckets)
        st = self.pieces[Tb]
        pad = Tb - T
        # the piece inputs: this iteration's tokens and positions, padded (one more D2D copy each)
        st["tok"][:T].copy_(meta["tok"])
        st["pos"][:T].copy_(meta["pos"])
        if pad:
            st["tok"][T:].zero_()
            st["pos"][T:].zero_()
        attn = self.attn_eager(meta)
        for j, (g, fn) in enumerate(st["graphs"]):
            if g is None:  # CPU check: static outputs, as a replay leaves them
                for o, n in zip(st["outs"][j], fn()):
                    o.copy_(n)
            else:
                g.replay()
            if j < len(self.m.layers):
                q, k, v, x, h = st["outs"][j]
                st["a"][:T].copy_(attn(j, q[:T], k[:T], v[:T]))
        hf = st["outs"][-1][0]
        return self.m.logits(hf.index_select(0, meta["rows"])), Tb

    # ---- sampler: temperature, top-k, top-p, exponential race (no host sync)
    def sample(self, logits, temp=0.8, top_k=50, top_p=0.95):
        x = logits.float() / temp
        v, i = x.topk(top_k, dim=-1)
        p = v.softmax(-1)
        cum = p.cumsum(-1)
        p = p.masked_fill(cum - p > top_p, 0.0)
        q = torch.empty_like(p).exponential_(generator=self.g)
        choice = (p / q).argmax(-1, keepdim=True)
        return i.gather(1, choice).squeeze(1)

    # ---- NVTX as the engines write it
    def vllm_annotation(self, batch):
        ctx = [(r, n, s) for r, n, s in batch if s < r.plen]
        gen = [(r, n, s) for r, n, s in batch if s >= r.plen]
        if self.nvtx == "vllm":
            return "execute_context_%d(%d)_generation_%d(%d)" % (
                len(ctx), sum(n for _, n, _ in ctx), len(gen), sum(n for _, n, _ in gen))

        def agg(rs):
            sk = sum(s + n for _, n, s in rs)
            qq = sum(n * n for _, n, _ in rs)
            qk = sum(n * (s + n) for _, n, s in rs)
            return sum(n for _, n, _ in rs), sk, qq, qk
        total = sum(n for _, n, _ in batch)
        c, g = agg(ctx), agg(gen)
        return ("execute_%d_context_%d(sq%dsk%dsqsq%dsqsk%d)_generation_%d(sq%dsk%dsqsq%dsqsk%d)"
                % ((total, len(ctx)) + c + (len(gen),) + g))

    def push(self, name):
        if self.cuda:
            torch.cuda.nvtx.range_push(name)

    def pop(self):
        if self.cuda:
            torch.cuda.nvtx.range_pop()

    # ---- disaggregation: KV export (prefill worker) and import (decode worker)
    def export_kv(self, r):
        """Gather the request's KV pages and copy them to pinned host memory on the transfer stream."""
        n = r.plen
        slots = torch.tensor([self.slot(r, p) for p in range(n)], dtype=torch.int64)
        nbytes = 0
        if self.cuda:
            ev = torch.cuda.Event()
            ev.record()
            host = torch.empty((len(self.kc), 2, n) + tuple(self.kc[0].shape[1:]), dtype=self.kc[0].dtype).pin_memory()
            with torch.cuda.stream(self.xfer):
                self.xfer.wait_event(ev)
                sl = slots.to(self.dev, non_blocking=False)
                send = torch.stack([torch.stack([self.kc[l].index_select(0, sl), self.vc[l].index_select(0, sl)])
                                    for l in range(len(self.kc))])
                host.copy_(send, non_blocking=True)
                done = torch.cuda.Event()
                done.record()
            nbytes = host.numel() * host.element_size()
            self.pending_exports.append((done, r, host, send))
        else:
            self.pending_exports.append((None, r, None, None))
        return nbytes

    def reap_exports(self, wait=False):
        keep = []
        for ev, r, host, send in self.pending_exports:
            if ev is None or wait or ev.query():
                if ev is not None:
                    ev.synchronize()
                self.release(r)
            else:
                keep.append((ev, r, host, send))
        self.pending_exports = keep

    def import_kv(self, r, host):
        """Copy a request's KV (pinned host) in on the transfer stream and scatter it into its pages."""
        self.ensure_blocks(r, r.plen + 1)
        slots = [self.slot(r, p) for p in range(r.plen)]
        if not self.cuda:
            return None, 0
        with torch.cuda.stream(self.xfer):
            sl = torch.tensor(slots, dtype=torch.int64).to(self.dev)
            stage = host.to(self.dev, non_blocking=True)
            for l in range(len(self.kc)):
                self.kc[l].index_copy_(0, sl, stage[l, 0])
                self.vc[l].index_copy_(0, sl, stage[l, 1])
            ev = torch.cuda.Event()
            ev.record()
        r._stage = stage
        return ev, host.numel() * host.element_size()

    # ---- one engine iteration
    def step(self, arrivals, on_start=None):
        rec = self.rec
        if rec is not None and rec.marker and self.cuda:
            torch.cuda.mem_get_info()  # cudaMemGetInfo: the iteration boundary (test scaffolding)
        t_ns = time.monotonic_ns()
        if on_start is not None:
            on_start()
        sg = self.nvtx == "sglang"
        if sg:
            self.push("scheduler.recv_requests")
        new = list(arrivals)
        if sg:
            self.pop()
            self.push("scheduler.process_input_requests")
        self.admit(new)
        if sg:
            self.pop()
            self.push("scheduler.get_next_batch_to_run")
        batch = self.schedule()
        if sg:
            self.pop()
        if not batch:
            return None
        # the order inside a batch: decode tokens first, then prompt chunks
        dec = [(r, n, s) for r, n, s in batch if s >= r.plen]
        chunks = [(r, n, s) for r, n, s in batch if s < r.plen]
        batch = dec + chunks
        info = {"graph": "eager", "bucket": None}
        vl = self.nvtx in ("vllm", "vllm-detailed")
        ann = None
        if vl:
            ann = self.vllm_annotation(batch)
            self.push(ann)
        if sg:
            ann = "scheduler.run_batch"
            self.push(ann)
        decode_only = not chunks
        if decode_only and self.mode in ("graph", "lazy", "piecewise") and len(batch) <= self.buckets[-1]:
            logits, how, B = self.forward_graph(batch)
            info = {"graph": how, "bucket": B}
        elif self.mode == "piecewise" and sum(n for _, n, _ in batch) <= self.tok_buckets[-1]:
            logits, Tb = self.forward_piecewise(batch)
            info = {"graph": "piecewise", "bucket": Tb}
        else:
            logits = self.forward_eager(batch)
        if vl:
            self.pop()  # vLLM: execute_model ends after the lm_head; sample_tokens follows outside
        toks = self.sample(logits)
        if sg:
            self.pop()
            self.push("scheduler.process_batch_result")
        out = toks.cpu().tolist()  # the read-back: one device-to-host copy per iteration
        exported = []
        for (r, n, s), t in zip(batch, out):
            if r.first_iter is None:
                r.first_iter = self.it
            r.computed = s + n
            if r.computed >= r.plen:  # a completed prompt samples its first token; a decode its next
                r.out.append(t)
            if self.role == "prefill" and not r.prefilling():
                exported.append(r)
            elif len(r.out) >= r.max_new:
                r.done = True
        nb = []
        for r in exported:  # the prefill worker hands the request over: KV out, never a decode
            nb.append({"request": r.id, "tokens": r.plen, "bytes": self.export_kv(r)})
            r.done = True
        for r in [r for r in self.running if r.done]:
            r.last_iter = self.it
            self.running.remove(r)
            self.finished.append(r)
            if self.role != "prefill":
                self.release(r)
        if self.role == "prefill":
            self.reap_exports()
        if sg:
            self.pop()
        kinds = {"d" if s >= r.plen else "p" for r, n, s in batch}
        phase = "mixed" if len(kinds) == 2 else ("decode" if kinds == {"d"} else "prefill")
        fw = {"iteration": self.it, "model": "target", "phase": phase,
              "kind": "graph-capture" if info["graph"] == "capture" else phase,
              "tokens": sum(n for _, n, _ in batch), "batch": len(batch),
              "decode_tokens": len(dec), "prompt_chunk_tokens": [n for _, n, _ in chunks],
              "prompt_chunks": [{"request": r.id, "start": s, "tokens": n, "completes_prompt": s + n == r.plen}
                                for r, n, s in chunks],
              "requests": [r.id for r, _, _ in batch], "graph": info["graph"], "bucket": info["bucket"],
              "t_ns": t_ns}
        if info["graph"] == "capture":
            fw["graph_capture"] = True
        if ann is not None:
            fw["nvtx"] = ann
        if nb:
            fw["kv_exports"] = nb
        if rec is not None:
            rec.forwards.append(fw)
        self.it += 1
        return fw


class Recorder:
    def __init__(self, marker=True):
        self.marker = marker
        self.forwards = []


def prof_start(a):
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        if not a.probe:
            torch.cuda.cudart().cudaProfilerStart()


def prof_stop(a):
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        if not a.probe:
            torch.cuda.cudart().cudaProfilerStop()


def prompts(n, lo, hi, seed, vocab):
    g = torch.Generator().manual_seed(seed)
    lens = torch.randint(lo, hi + 1, (n,), generator=g).tolist()
    return [torch.randint(2, vocab, (l,), generator=g).tolist() for l in lens]


def run_program(eng, reqs, hooks=None, max_iters=1000):
    """Run until every request is done; a request arrives at iteration r.arrive."""
    pending = sorted(reqs, key=lambda r: r.arrive)
    while (pending or eng.running or eng.waiting) and eng.it < max_iters:
        arr = [r for r in pending if r.arrive <= eng.it]
        pending = [r for r in pending if r.arrive > eng.it]
        if not arr and not eng.running and not eng.waiting:
            eng.it = pending[0].arrive  # idle until the next arrival (not an iteration)
            continue
        if hooks:
            hooks(eng)
        eng.step(arr)
    return eng


def req_rows(reqs):
    return [{"request": r.id, "prompt_len": r.plen, "output_len": len(r.out), "max_new_tokens": r.max_new,
             "arrival_iteration": r.arrive, "first_iteration": r.first_iter, "last_iteration": r.last_iter}
            for r in reqs]


def counts(fws, reqs, rounds=None):
    c = {"forwards": len(fws), "target_forwards": sum(f["model"] == "target" for f in fws),
         "draft_forwards": sum(f["model"] == "draft" for f in fws)}
    for k in ("prefill", "decode", "mixed", "partial"):
        c[k] = sum(1 for f in fws if f["model"] == "target" and f["phase"] == k)
    c["graph_capture"] = sum(1 for f in fws if f.get("graph_capture"))
    c["rounds"] = len(rounds) if rounds else None
    c["requests"] = len(reqs)
    return c


def finish_truth(truth, fws):
    for i, f in enumerate(fws):
        f["i"] = i
    truth["forwards"] = fws


# ------------------------------------------------------------------------------------------ cases

def warm(eng, vocab, n=3, plen=40, new=3, seed=99):
    rs = [Req(1000 + i, p, new) for i, p in enumerate(prompts(n, plen, plen + 30, seed, vocab))]
    run_program(eng, rs)
    eng.reset()


def case_engine(a, dev, truth, family, mode, sched="vllm", nvtx=None, nreq=30, arrive_every=2,
                plen=(40, 400), new=(4, 24), budget=256, max_seqs=16, first=6):
    m, c = build(family, dev)
    eng = Engine(m, c, dev, a, mode="eager" if mode == "lazy" else mode, sched=sched, nvtx=nvtx,
                 budget=budget, max_seqs=max_seqs)
    if mode in ("graph", "piecewise") or (sched == "sglang" and mode == "graph"):
        for B in eng.buckets:
            eng.capture_bucket(B)
    if mode == "piecewise":
        for Tb in eng.tok_buckets:
            eng.capture_pieces(Tb)
    warm(eng, c["vocab"])
    if mode == "lazy":
        eng.mode = "lazy"
    g = torch.Generator().manual_seed(5)
    ps = prompts(nreq, plen[0], plen[1], 11, c["vocab"])
    outs = torch.randint(new[0], new[1] + 1, (nreq,), generator=g).tolist()
    reqs = [Req(i, p, o, arrive=0 if i < first else (i - first + 1) * arrive_every)
            for i, (p, o) in enumerate(zip(ps, outs))]
    eng.rec = Recorder()
    prof_start(a)
    t0 = time.time()
    run_program(eng, reqs)
    prof_stop(a)
    truth["measured_wall_s"] = round(time.time() - t0, 3)
    fws = eng.rec.forwards
    finish_truth(truth, fws)
    truth.update(family=family, model=c, engine=dict(mode=mode, scheduler=sched, nvtx=nvtx, token_budget=budget,
                                                     max_seqs=max_seqs, block_size=eng.bs, max_len=eng.max_len,
                                                     buckets=list(eng.buckets) if mode != "eager" else None,
                                                     token_buckets=list(eng.tok_buckets) if mode == "piecewise" else None))
    truth["requests"] = req_rows(reqs)
    truth["counts"] = counts(fws, reqs)
    truth["markers"] = len(fws)
    truth["graphs_captured_in_window"] = [{"iteration": f["iteration"], "bucket": f["bucket"]}
                                          for f in fws if f.get("graph_capture")]


def case_window(a, dev, truth, family="moe", k=6, m_iter=26):
    """Eager engine; the window opens after layer 2 of iteration k's forward and closes after
    layer 1 of iteration m's forward (hooks on the layer modules)."""
    m, c = build(family, dev)
    eng = Engine(m, c, dev, a, budget=512, max_seqs=8)
    warm(eng, c["vocab"])
    ps = prompts(8, 60, 200, 13, c["vocab"])
    outs = [40, 38, 36, 30, 24, 26, 34, 40]  # some finish inside the window: the batch shrinks
    reqs = [Req(i, p, o) for i, (p, o) in enumerate(zip(ps, outs))]
    state = {"start": None, "stop": None}

    def on_layer(mod, args, out):
        if mod.idx == 2 and eng.it == k and state["start"] is None:
            state["start"] = time.monotonic_ns()
            prof_start_nosync(a)
        if mod.idx == 1 and eng.it == m_iter and state["start"] is not None and state["stop"] is None:
            state["stop"] = time.monotonic_ns()
            prof_stop_nosync(a)
    hs = [l.register_forward_hook(on_layer) for l in m.layers]
    eng.rec = Recorder()
    t0 = time.time()
    run_program(eng, reqs)
    for h in hs:
        h.remove()
    truth["measured_wall_s"] = round(time.time() - t0, 3)
    allf = eng.rec.forwards
    fws = [dict(f) for f in allf if k <= f["iteration"] <= m_iter]
    assert all(f["phase"] == "decode" for f in fws), [f["phase"] for f in fws]
    for f, part in ((fws[0], "starts after layer 2 of %d: the window opened in its forward (layers 3.. and the "
                             "lm_head, sampler and read-back are in the trace; its marker and input copy are not)"
                     % c["layers"]),
                    (fws[-1], "ends after layer 1 of %d: the window closed in its forward (its marker, input copy "
                              "and layers 0-1 are in the trace)" % c["layers"])):
        f["true_phase"] = f["phase"]
        f["phase"] = f["kind"] = "partial"
        f["partial"] = part
    finish_truth(truth, fws)
    truth.update(family=family, model=c, engine=dict(mode="eager", scheduler="vllm", token_budget=512, max_seqs=8,
                                                     block_size=eng.bs))
    truth["window"] = {"opened_in_iteration": k, "after_layer": 2, "closed_in_iteration": m_iter,
                       "closed_after_layer": 1, "run_iterations": len(allf),
                       "run_phases": [f["phase"][0] for f in allf]}
    truth["requests"] = req_rows(reqs)
    truth["counts"] = counts(fws, reqs)
    truth["markers"] = len(fws) - 1  # the first iteration's marker precedes the window
    truth["marker_note_window"] = ("the first (partial) iteration's marker is before the window; windows in SQL: "
                                   "before the first marker = iteration %d, then one per marker" % k)


def prof_start_nosync(a):
    if torch.cuda.is_available() and not a.probe:
        torch.cuda.cudart().cudaProfilerStart()


def prof_stop_nosync(a):
    if torch.cuda.is_available() and not a.probe:
        torch.cuda.cudart().cudaProfilerStop()


def case_bench(a, dev, truth, family="gemma", runs=6, nreq=4, plen=(48, 64), new=2, pause=0.02):
    m, c = build(family, dev)
    eng = Engine(m, c, dev, a, budget=512, max_seqs=8)
    warm(eng, c["vocab"])
    ps = prompts(nreq, plen[0], plen[1], 17, c["vocab"])
    news = [new] * nreq if isinstance(new, int) else new
    eng.rec = Recorder()
    prof_start(a)
    t0 = time.time()
    allreqs, runrows = [], []
    for run in range(runs):
        eng.reset(keep_it=True)
        reqs = [Req(run * 10 + i, list(p), news[i]) for i, p in enumerate(ps)]
        n0 = len(eng.rec.forwards)
        run_program(eng, reqs)
        for f in eng.rec.forwards[n0:]:
            f["run"] = run
        runrows.append({"run": run, "forwards": list(range(n0, len(eng.rec.forwards)))})
        allreqs += reqs
        time.sleep(pause)  # the benchmark loop's host work between runs
    prof_stop(a)
    truth["measured_wall_s"] = round(time.time() - t0, 3)
    fws = eng.rec.forwards
    finish_truth(truth, fws)
    truth.update(family=family, model=c, engine=dict(mode="eager", scheduler="vllm", token_budget=512,
                                                     block_size=eng.bs), runs=runrows, host_pause_s=pause)
    truth["requests"] = req_rows(allreqs)
    truth["counts"] = counts(fws, allreqs)
    truth["markers"] = len(fws)


def case_disagg_prefill(a, dev, truth, family="moe"):
    m, c = build(family, dev)
    eng = Engine(m, c, dev, a, budget=256, max_seqs=16, role="prefill")
    warm(eng, c["vocab"])
    eng.reap_exports(wait=True)
    eng.reset()
    ps = prompts(16, 50, 400, 19, c["vocab"])
    reqs = [Req(i, p, 1, wave=0 if i < 8 else 1) for i, p in enumerate(ps)]
    eng.rec = Recorder()
    prof_start(a)
    t0 = time.time()
    for w in (0, 1):
        wave = [r for r in reqs if r.wave == w]
        for r in wave:
            r.arrive = eng.it
        run_program(eng, wave)
        eng.reap_exports(wait=True)
        if w == 0:
            time.sleep(0.15)  # idle: no request to prefill until the next wave arrives
    prof_stop(a)
    truth["measured_wall_s"] = round(time.time() - t0, 3)
    fws = eng.rec.forwards
    assert all(f["phase"] == "prefill" for f in fws)
    finish_truth(truth, fws)
    truth.update(family=family, model=c, engine=dict(mode="eager", role="prefill-only worker", token_budget=256,
                                                     block_size=eng.bs), idle_pause_s=0.15)
    truth["kv_exports"] = [dict(e, iteration=f["iteration"]) for f in fws for e in f.get("kv_exports", [])]
    truth["kv_export_how"] = ("after the iteration whose chunk completes a prompt: on a transfer stream, per layer "
                              "index_select of K and V pages, stacked, one device-to-host copy into pinned memory")
    truth["requests"] = req_rows(reqs)
    truth["counts"] = counts(fws, reqs)
    truth["markers"] = len(fws)


def case_disagg_decode(a, dev, truth, family="moe"):
    m, c = build(family, dev)
    eng = Engine(m, c, dev, a, mode="graph", budget=256, max_seqs=8, role="decode")
    for B in eng.buckets:
        eng.capture_bucket(B)
    warm(eng, c["vocab"])
    ps = prompts(8, 60, 300, 23, c["vocab"])
    outs = [30, 26, 28, 20, 24, 18, 22, 16]
    arrive = [0, 2, 4, 6, 8, 10, 12, 14]
    reqs = [Req(i, p, o, arrive=t) for i, (p, o, t) in enumerate(zip(ps, outs, arrive))]
    # what the prefill worker sent: each request's KV in pinned host memory, and its first token
    KV, hd = c["kv_heads"], c["head_dim"]
    dt = m.embed.weight.dtype
    hosts = {}
    for r in reqs:
        t = torch.randn(c["layers"], 2, r.plen, KV, hd).to(dt)
        hosts[r.id] = t.pin_memory() if eng.cuda else t
        r.computed = r.plen
        r.out = [5]
    eng.rec = Recorder()
    imports = []
    events = {}

    def import_now(r):
        ev, nbytes = eng.import_kv(r, hosts[r.id])
        events[r.id] = ev
        imports.append({"request": r.id, "issued_in_iteration": r.arrive if r.arrive >= 0 else None,
                        "tokens": r.plen, "bytes": nbytes, "joins_iteration": r.arrive + 1})
    # request 0's KV came in before the window; it decodes from iteration 0
    reqs[0].arrive = -1
    import_now(reqs[0])
    prof_start(a)
    t0 = time.time()
    pending = reqs[1:]
    joining = [reqs[0]]
    while joining or eng.running or pending:
        arr, joining = joining, []
        for r in arr:  # the compute stream waits for the request's KV transfer
            if events.get(r.id) is not None:
                torch.cuda.current_stream().wait_event(events[r.id])

        def on_start():  # requests arriving now: their KV import is issued inside this iteration
            for r in [r for r in pending if r.arrive == eng.it]:
                import_now(r)
                joining.append(r)
        fw = eng.step(arr, on_start)
        pending = [r for r in pending if r not in joining]
        if fw is None:
            eng.it += 1
    prof_stop(a)
    truth["measured_wall_s"] = round(time.time() - t0, 3)
    fws = eng.rec.forwards
    assert all(f["phase"] == "decode" for f in fws), [f["phase"] for f in fws]
    finish_truth(truth, fws)
    truth.update(family=family, model=c, engine=dict(mode="graph", role="decode-only worker", buckets=list(eng.buckets),
                                                     block_size=eng.bs, max_seqs=8))
    truth["kv_imports"] = imports
    truth["kv_import_how"] = ("on a transfer stream: the block-slot indices and the request's KV (pinned host) copied "
                              "host to device, then per layer index_copy_ of K and V into the paged cache; issued in "
                              "the iteration the request arrives, the request joins the next one (the compute stream "
                              "waits on the transfer's event)")
    truth["requests"] = req_rows(reqs)
    truth["counts"] = counts(fws, reqs)
    truth["markers"] = len(fws)
    truth["batch_by_iteration"] = [f["batch"] for f in fws]
    truth["bucket_by_iteration"] = [f["bucket"] for f in fws]


# -------------------------------------------------------------------------------------- EAGLE

class Draft(nn.Module):
    """EAGLE head: fc([embedding; target hidden]) -> one decoder layer -> the target's norm/lm_head."""

    def __init__(self, target, c):
        super().__init__()
        dc = dict(c)
        dc["layers"] = 1
        self.fc = nn.Linear(2 * c["hidden"], c["hidden"], bias=False)
        self.layer = Layer(dc, 0)
        self.norm = Norm(c["norm"], c["hidden"])
        self.t = [target]

    def forward(self, tok, hid, pos, attn):
        t = self.t[0]
        cos, sin = t.cos_sin(pos)
        h = self.fc(torch.cat([t.emb(tok), hid], dim=-1))
        self.layer.attn_fn = attn
        h = self.layer(h, cos, sin)
        return h, t.logits(self.norm(h))


def case_eagle(a, dev, truth, family="mistral", B=4, K=3, rounds=8):
    m, c = build(family, dev)
    eng = Engine(m, c, dev, a, budget=1024, max_seqs=B)
    torch.manual_seed(77)
    draft = Draft(m, c).to(dev, m.embed.weight.dtype).eval()
    for p in draft.parameters():
        if p.dim() >= 2:
            nn.init.normal_(p, std=0.02)
    KV, hd, L, Q = c["kv_heads"], c["head_dim"], eng.max_len, K + 1
    dt = m.embed.weight.dtype
    dkc = torch.zeros_like(eng.kc[0])
    dvc = torch.zeros_like(eng.vc[0])
    H = c["hidden"]
    # static buffers: draft (B tokens) and verify (B x Q tokens); metadata in packed int64 buffers
    d_lay = [("tok", B), ("pos", B), ("slot", B), ("gsl", B * L), ("lens", B)]
    v_lay = [("tok", B * Q), ("pos", B * Q), ("slot", B * Q), ("gsl", B * L), ("qpos", B * Q)]

    def mkbuf(lay):
        buf = torch.zeros(sum(n for _, n in lay), dtype=torch.int64, device=dev)
        views, o = {}, 0
        for name, n in lay:
            views[name] = buf[o:o + n]
            o += n
        return buf, views
    dbuf, dv = mkbuf(d_lay)
    vbuf, vv = mkbuf(v_lay)
    dv["lens"].fill_(1)
    d_hid = torch.zeros(B, H, device=dev, dtype=dt)

    def d_attn(l, q, k, v):
        dkc.index_copy_(0, dv["slot"], k)
        dvc.index_copy_(0, dv["slot"], v)
        Kc = dkc[dv["gsl"]].view(B, L, KV, hd)
        Vc = dvc[dv["gsl"]].view(B, L, KV, hd)
        mask = (torch.arange(L, device=dev)[None, :] < dv["lens"][:, None]).view(B, 1, 1, L)
        return attend(q.unsqueeze(1), Kc, Vc, mask=mask).reshape(B, -1)

    def d_fn():
        h, lg = draft(dv["tok"], d_hid, dv["pos"], d_attn)
        return h, lg.argmax(-1)

    def v_attn(l, q, k, v):
        eng.kc[l].index_copy_(0, vv["slot"], k)
        eng.vc[l].index_copy_(0, vv["slot"], v)
        Kc = eng.kc[l][vv["gsl"]].view(B, L, KV, hd)
        Vc = eng.vc[l][vv["gsl"]].view(B, L, KV, hd)
        mask = (torch.arange(L, device=dev)[None, None, :] <= vv["qpos"].view(B, Q, 1)).view(B, 1, Q, L)
        return attend(q.view(B, Q, c["heads"], hd), Kc, Vc, mask=mask).reshape(B * Q, -1)

    def v_fn():
        h = m.hidden(vv["tok"], vv["pos"], v_attn)
        return h, m.logits(h).argmax(-1)

    # prefill (eager, before the window) for target and draft, then graphs
    ps = prompts(B, 80, 160, 29, c["vocab"])
    reqs = [Req(i, p, 10 ** 6) for i, p in enumerate(ps)]
    eng.rec = None
    fw = eng.step(reqs)
    while any(r.prefilling() for r in reqs):
        fw = eng.step([])
    for r in reqs:
        eng.ensure_blocks(r, L)
    dblocks = {r.id: list(r.blocks) for r in reqs}  # the draft cache uses the same page layout
    for r in reqs:
        r.n = r.computed  # tokens with target KV
        r.last = r.out[-1]
        r.dn = 0
    g_d, (d_hout, d_tout) = eng.capture(d_fn)
    g_v, (v_hout, v_tout) = eng.capture(v_fn)
    sel = torch.zeros(B, dtype=torch.int64, device=dev)
    verify_tok = torch.zeros(B, Q, dtype=torch.int64, device=dev)
    d_hid.copy_(v_hout.view(B, Q, H)[:, 0])  # stand-in for the prefill's last hidden state (before the window)
    rec = Recorder()
    rows = []

    def slot(r, p):
        return dblocks[r.id][p // eng.bs] * eng.bs + p % eng.bs

    def draft_meta(j):
        tok, pos, sl, gsl, lens = [], [], [], [], []
        for r in reqs:
            p = r.n + j
            tok.append(r.last if j == 0 else 0)
            pos.append(p)
            sl.append(slot(r, p))
            row = [slot(r, x) for x in range(p + 1)]
            gsl.extend(row + [0] * (L - len(row)))
            lens.append(p + 1)
        return [("tok", tok), ("pos", pos), ("slot", sl), ("gsl", gsl), ("lens", lens)]

    def verify_meta():
        tok, pos, sl, gsl, qpos = [], [], [], [], []
        for r in reqs:
            for j in range(Q):
                tok.append(0)
                pos.append(r.n + j)
                sl.append(eng.slot(r, r.n + j))
                qpos.append(r.n + j)
            row = [eng.slot(r, x) for x in range(r.n + Q)]
            gsl.extend(row + [0] * (L - len(row)))
        return [("tok", tok), ("pos", pos), ("slot", sl), ("gsl", gsl), ("qpos", qpos)]

    def replay(g, fn):
        if g is None:
            return fn()
        g.replay()

    def forward(model, rnd, j):
        if eng.cuda:
            torch.cuda.mem_get_info()  # the forward's marker
        rec.forwards.append({"model": model, "round": rnd, "draft_step": j if model == "draft" else None,
                             "phase": "decode", "kind": "decode", "batch": B,
                             "tokens": B if model == "draft" else B * Q, "graph": "replay", "bucket": B,
                             "t_ns": time.monotonic_ns()})
        return len(rec.forwards) - 1

    def one_round(rnd, verify=True):
        fs = []
        for j in range(K):
            fs.append(forward("draft", rnd, j))
            eng.upload(draft_meta(j), dst=dbuf)
            if j == 0:
                verify_tok[:, 0].copy_(dv["tok"])  # the last accepted token leads the verify
            else:
                dv["tok"].copy_(d_tout)
                d_hid.copy_(d_hout)
            replay(g_d, d_fn)
            verify_tok[:, j + 1].copy_(d_tout)
        if not verify:
            return fs, None
        fs.append(forward("target", rnd, None))
        eng.upload(verify_meta(), dst=vbuf)
        vv["tok"].copy_(verify_tok.view(-1))
        replay(g_v, v_fn)
        both = torch.cat([v_tout.view(B, Q), verify_tok[:, 1:]], dim=1)
        res = both.cpu().tolist()  # the round's read-back: target tokens and draft tokens
        acc = []
        for r, row in zip(reqs, res):
            gt, dr = row[:Q], row[Q:]
            a_ = 0
            while a_ < K and dr[a_] == gt[a_]:
                a_ += 1
            acc.append(a_)
            r.out.extend(gt[: a_ + 1])
            r.n += a_ + 1
            r.last = gt[a_]
        # next round's draft input: the target's hidden state at each request's last accepted token
        eng.upload([("sel", [i * Q + x for i, x in enumerate(acc)])], dst=sel)
        d_hid.copy_(v_hout.index_select(0, sel))
        return fs, acc
    # warm-up rounds (before the window)
    for w in range(2):
        one_round(-1)
    rec.forwards = []
    prof_start(a)
    t0 = time.time()
    for rnd in range(rounds):
        fs, acc = one_round(rnd)
        rows.append({"round": rnd, "forwards": fs, "draft_forwards": K, "verify_forward": fs[-1],
                     "verify_tokens": B * Q, "phase": "decode", "accepted": acc,
                     "tokens_added": [x + 1 for x in acc]})
    fs, _ = one_round(rounds, verify=False)
    rows.append({"round": rounds, "forwards": fs, "draft_forwards": K, "verify_forward": None,
                 "verify_tokens": None, "phase": "partial",
                 "note": "the window ends after this round's draft forwards, before its verify"})
    prof_stop(a)
    truth["measured_wall_s"] = round(time.time() - t0, 3)
    fws = rec.forwards
    for f in fws:
        if f["model"] == "draft" and f["round"] == rounds:
            f["round_partial"] = True
    finish_truth(truth, fws)
    truth.update(family=family, model=c, draft={"kind": "EAGLE head", "layers": 1, "fc": [2 * H, H],
                                                 "shares": "embedding, lm_head"},
                 num_draft_tokens=K, batch=B, engine=dict(mode="graph", block_size=eng.bs, max_len=L))
    truth["rounds"] = rows
    truth["requests"] = [{"request": r.id, "prompt_len": r.plen, "output_len": len(r.out)} for r in reqs]
    truth["counts"] = counts(fws, reqs, rows)
    truth["markers"] = len(fws)
    truth["graph_launches"] = len(fws)


CASES = {
    "eager-cb": lambda a, d, t: case_engine(a, d, t, "mistral", "eager"),
    "graph-buckets": lambda a, d, t: case_engine(a, d, t, "gemma", "graph", nreq=20, max_seqs=8, first=3,
                                                 arrive_every=4, plen=(40, 300), new=(6, 28)),
    "lazy-capture": lambda a, d, t: case_engine(a, d, t, "phi2", "lazy", nreq=10, max_seqs=8, first=1,
                                                arrive_every=3, plen=(30, 200), new=(12, 30)),
    "window": case_window,
    "bench": case_bench,
    "repeat": lambda a, d, t: case_bench(a, d, t, "phi2", runs=3, nreq=6, plen=(60, 200), new=[8, 12, 10, 14, 9, 12],
                                         pause=0.05),
    "disagg-prefill": case_disagg_prefill,
    "disagg-decode": case_disagg_decode,
    "nvtx-vllm": lambda a, d, t: case_engine(a, d, t, "phi2", "eager", nvtx="vllm", nreq=12, first=4,
                                             arrive_every=3, new=(4, 16)),
    "nvtx-vllm-detailed": lambda a, d, t: case_engine(a, d, t, "mistral", "eager", nvtx="vllm-detailed", nreq=12,
                                                      first=4, arrive_every=3, new=(4, 16)),
    "nvtx-sglang": lambda a, d, t: case_engine(a, d, t, "gemma", "graph", sched="sglang", nvtx="sglang", nreq=12,
                                               max_seqs=8, first=4, arrive_every=4, new=(4, 16)),
    "piecewise": lambda a, d, t: case_engine(a, d, t, "mistral", "piecewise", nreq=16, max_seqs=8, first=3,
                                             arrive_every=3, plen=(30, 300), new=(6, 24)),
    "eagle": case_eagle,
}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--case", required=True, choices=sorted(CASES))
    p.add_argument("--name", default=None)
    p.add_argument("--truth", help="write the ground-truth JSON here")
    p.add_argument("--probe", action="store_true", help="no cudaProfilerStart/Stop")
    p.add_argument("--cpu", action="store_true", help="check the logic on the CPU (no graphs, no markers)")
    a = p.parse_args()
    dev = torch.device("cpu" if a.cpu or not torch.cuda.is_available() else "cuda")
    global TINY
    TINY = dev.type == "cpu"
    truth = {"name": a.name or a.case, "case": a.case, "probe": a.probe, "marker": dev.type == "cuda",
             "marker_note": ("one cudaMemGetInfo (torch.cuda.mem_get_info) at the start of every engine iteration "
                             "(eagle: of every forward), before its input copy: test scaffolding, the analyzer must "
                             "give the same result without those rows"),
             "workload": "testdata/capture/engine_workload.py", "torch": torch.__version__,
             "device": torch.cuda.get_device_name(0) if dev.type == "cuda" else "cpu"}
    t0 = time.time()
    with torch.inference_mode():
        CASES[a.case](a, dev, truth)
    truth["wall_s"] = round(time.time() - t0, 2)
    if a.truth:
        with open(a.truth, "w") as f:
            f.write(json.dumps(truth, indent=1) + "\n")
    summ = {k: truth.get(k) for k in ("name", "counts", "markers", "measured_wall_s")}
    summ["phases"] = "".join(f["phase"][0] if f["model"] == "target" else "d" for f in truth["forwards"])
    print(json.dumps({"workload": summ}))


if __name__ == "__main__":
    main()
