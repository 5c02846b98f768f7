#!/usr/bin/env python3
"""LLM-style decode workload for Nsight Systems captures (see testdata/traces/README.md).

Behaves like a serving engine's model runner: one prefill step, then N decode steps,
each ending with a greedy sample whose token ids are read back to the host (.cpu(),
one device-to-host copy per step). No downloads: random bf16 weights from a fixed seed.

Model: L layers of [RMSNorm -> fused QKV GEMM -> KV-cache write -> SDPA -> O GEMM
(-> all-reduce) -> residual -> RMSNorm -> MLP (-> all-reduce) -> residual], then a final
RMSNorm, the lm_head GEMM (-> all-gather of the vocab shards) and argmax.
MLP is dense (gate_up GEMM, SiLU*up, down GEMM) or MoE (router GEMM -> softmax -> top-2 of
8 experts -> per-expert index_select / gate_up GEMM / SiLU*up / down GEMM / index_add).

The MoE dispatch is "dropless with static capacity": every expert gathers C = T token slots
(T = tokens in the step), ranked by its combine weight; tokens not routed to it carry
weight 0. Shapes are static, so the same code is CUDA-graph capturable.

Decode attention reads the whole preallocated KV cache (max_seq slots) with an additive
mask row selected by a device-side position tensor, so a decode step has no host-dependent
shapes and is identical in eager and graph mode (graph mode replays one captured step).

Only the measured region (prefill + N decode steps) lies between cudaProfilerStart/Stop;
warm-up and graph capture happen before it (with --serve-order: inside it, between the
prefill and the first step, and a post-loop kernel follows the last step).
"""
import argparse
import json
import math
import os
import sys

# Keep NVLink multicast off (shared machines), also in spawned children.
os.environ["NCCL_NVLS_ENABLE"] = "0"
os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] = "1"
os.environ["NVSHMEM_DISABLE_NVLS"] = "1"

import torch
import torch.nn.functional as F


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=["eager", "graph"], default="eager")
    p.add_argument("--mlp", choices=["dense", "moe"], default="dense")
    p.add_argument("--nvtx", action="store_true", help="NVTX ranges per step (and moe_route)")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--steps", type=int, default=12, help="decode steps measured")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel GPUs (NCCL)")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--prefill-len", type=int, default=256)
    p.add_argument("--max-seq", type=int, default=512)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--ffn", type=int, default=4096, help="dense MLP intermediate size")
    p.add_argument("--experts", type=int, default=8)
    p.add_argument("--topk", type=int, default=2)
    p.add_argument("--expert-ffn", type=int, default=1024)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--warmup", type=int, default=3, help="eager decode steps before capture")
    p.add_argument("--serve-order", action="store_true",
                   help="measure what a server runs around its loop: the prefill, then the eager warm-up "
                        "decode steps (read-backs, no NVTX) and the graph capture, then the N steps, then, "
                        "15 ms after the last one, one post-loop kernel")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--port", type=int, default=29517)
    a = p.parse_args(argv)
    assert a.heads % a.tp == 0 and a.ffn % a.tp == 0 and a.expert_ffn % a.tp == 0
    assert a.vocab % a.tp == 0
    assert a.prefill_len + a.warmup + a.steps <= a.max_seq
    return a


def nvtx_push(on, name):
    if on:
        torch.cuda.nvtx.range_push(name)


def nvtx_pop(on):
    if on:
        torch.cuda.nvtx.range_pop()


class Model:
    def __init__(self, a, rank, tp, dev):
        self.a, self.rank, self.tp, self.dev = a, rank, tp, dev
        bf = torch.bfloat16
        H = a.hidden
        self.hd = H // a.heads
        self.nhl = a.heads // tp          # local heads
        self.Hl = self.nhl * self.hd      # local attention width
        self.Fl = a.ffn // tp
        self.EFl = a.expert_ffn // tp
        self.Vl = a.vocab // tp

        # Replicated parameters: same seed on every rank.
        g = torch.Generator(device=dev).manual_seed(a.seed)

        def rnd(*shape, gen):
            return (torch.randn(*shape, device=dev, generator=gen, dtype=torch.float32) * 0.02).to(bf)

        self.emb = rnd(a.vocab, H, gen=g)
        self.ln1 = [torch.ones(H, device=dev, dtype=bf) for _ in range(a.layers)]
        self.ln2 = [torch.ones(H, device=dev, dtype=bf) for _ in range(a.layers)]
        self.lnf = torch.ones(H, device=dev, dtype=bf)
        if a.mlp == "moe":
            self.router = [rnd(H, a.experts, gen=g) for _ in range(a.layers)]
        # Sharded parameters: per-rank seed (values are random anyway).
        gs = torch.Generator(device=dev).manual_seed(a.seed + 1000 + rank)
        self.wqkv = [rnd(H, 3 * self.Hl, gen=gs) for _ in range(a.layers)]
        self.wo = [rnd(self.Hl, H, gen=gs) for _ in range(a.layers)]
        if a.mlp == "dense":
            self.wgu = [rnd(H, 2 * self.Fl, gen=gs) for _ in range(a.layers)]
            self.wd = [rnd(self.Fl, H, gen=gs) for _ in range(a.layers)]
        else:
            self.ewgu = [[rnd(H, 2 * self.EFl, gen=gs) for _ in range(a.experts)] for _ in range(a.layers)]
            self.ewd = [[rnd(self.EFl, H, gen=gs) for _ in range(a.experts)] for _ in range(a.layers)]
        self.wlm = rnd(H, self.Vl, gen=gs)

        # KV cache [B, local heads, max_seq, head_dim] per layer.
        B, S = a.batch, a.max_seq
        self.kc = [torch.zeros(B, self.nhl, S, self.hd, device=dev, dtype=bf) for _ in range(a.layers)]
        self.vc = [torch.zeros(B, self.nhl, S, self.hd, device=dev, dtype=bf) for _ in range(a.layers)]
        # Additive mask table: row p allows key slots 0..p.
        ar = torch.arange(S, device=dev)
        self.mask_table = torch.zeros(S, S, device=dev, dtype=bf).masked_fill_(
            ar[None, :] > ar[:, None], float("-inf"))
        # Static buffers (graph inputs/outputs).
        self.pos = torch.full((1,), a.prefill_len, device=dev, dtype=torch.long)
        self.tokens = torch.zeros(B, device=dev, dtype=torch.long)
        self.prompt = torch.randint(0, a.vocab, (B, a.prefill_len), device=dev, generator=g)
        self.nvtx_route = False   # set by the runner

    # ---- collectives -------------------------------------------------------
    def all_reduce(self, t):
        if self.tp > 1:
            import torch.distributed as dist
            dist.all_reduce(t)
        return t

    def gather_logits(self, logits):  # [B, Vl] -> [B, V]
        if self.tp == 1:
            return logits
        import torch.distributed as dist
        B = logits.shape[0]
        out = torch.empty(self.tp * B, self.Vl, device=self.dev, dtype=logits.dtype)
        dist.all_gather_into_tensor(out, logits.contiguous())
        return out.view(self.tp, B, self.Vl).permute(1, 0, 2).reshape(B, self.tp * self.Vl)

    # ---- blocks ------------------------------------------------------------
    def rms(self, x, w):
        return F.rms_norm(x, (x.shape[-1],), w, 1e-6)

    def mlp(self, l, h):  # h [T, H]
        if self.a.mlp == "dense":
            g, u = (h @ self.wgu[l]).chunk(2, dim=-1)
            return (F.silu(g) * u) @ self.wd[l]
        a = self.a
        T = h.shape[0]
        nvtx_push(self.nvtx_route, "moe_route")
        probs = (h @ self.router[l]).float().softmax(dim=-1)          # [T, E]
        w, ids = probs.topk(a.topk, dim=-1)                            # [T, k]
        w = w / w.sum(dim=-1, keepdim=True)
        combine = torch.zeros(T, a.experts, device=self.dev, dtype=torch.float32).scatter_(1, ids, w)
        cw, cidx = combine.t().topk(T, dim=1)                          # [E, C=T] slots per expert
        cw = cw.to(h.dtype)
        nvtx_pop(self.nvtx_route)
        out = torch.zeros_like(h)
        for e in range(a.experts):
            idx = cidx[e]
            xe = h.index_select(0, idx)
            g, u = (xe @ self.ewgu[l][e]).chunk(2, dim=-1)
            ye = (F.silu(g) * u) @ self.ewd[l][e]
            out.index_add_(0, idx, ye * cw[e].unsqueeze(1))
        return out

    def layer(self, l, x, attn):  # x [T, H]
        h = self.rms(x, self.ln1[l])
        a = attn(l, h @ self.wqkv[l])                                  # [T, Hl]
        x = x + self.all_reduce(a @ self.wo[l])
        h = self.rms(x, self.ln2[l])
        return x + self.all_reduce(self.mlp(l, h))

    def sample(self, h_last):  # [B, H] -> writes self.tokens
        logits = self.gather_logits(self.rms(h_last, self.lnf) @ self.wlm)
        self.tokens.copy_(logits.argmax(dim=-1))

    # ---- steps -------------------------------------------------------------
    def prefill(self):
        a = self.a
        B, P = a.batch, a.prefill_len

        def attn(l, qkv):
            q, k, v = qkv.view(B, P, 3, self.nhl, self.hd).permute(2, 0, 3, 1, 4).unbind(0)
            self.kc[l][:, :, :P].copy_(k)
            self.vc[l][:, :, :P].copy_(v)
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # [B, nhl, P, hd]
            return o.transpose(1, 2).reshape(B * P, self.Hl)

        x = F.embedding(self.prompt.view(-1), self.emb)                # [B*P, H]
        for l in range(a.layers):
            x = self.layer(l, x, attn)
        self.sample(x.view(B, P, -1)[:, -1])

    def decode_step(self):
        a = self.a
        B = a.batch
        mask = self.mask_table.index_select(0, self.pos).view(1, 1, 1, a.max_seq)

        def attn(l, qkv):
            q, k, v = qkv.view(B, 3, self.nhl, 1, self.hd).unbind(1)   # [B, nhl, 1, hd]
            self.kc[l].index_copy_(2, self.pos, k)
            self.vc[l].index_copy_(2, self.pos, v)
            o = F.scaled_dot_product_attention(q, self.kc[l], self.vc[l], attn_mask=mask)
            return o.reshape(B, self.Hl)

        x = F.embedding(self.tokens, self.emb)                         # [B, H]
        for l in range(a.layers):
            x = self.layer(l, x, attn)
        self.sample(x)
        self.pos.add_(1)


def nccl_version():
    try:
        v = torch.cuda.nccl.version()
    except Exception:  # pragma: no cover
        return None
    return ".".join(map(str, v)) if isinstance(v, tuple) else str(v)


def design(a):
    """Structure implied by the workload definition (what the trace should show)."""
    gemm_layer = 4 if a.mlp == "dense" else 3 + 2 * a.experts
    return {
        "gemm_per_layer": gemm_layer,
        "gemm_per_step": gemm_layer * a.layers + 1,
        "attention_calls_per_layer": 1,
        "router_blocks_per_step": a.layers if a.mlp == "moe" else 0,
        "allreduce_per_step": 2 * a.layers if a.tp > 1 else 0,
        "allgather_per_step": 1 if a.tp > 1 else 0,
        "d2h_copies_per_rank": 1 + a.steps,
        "graph_launches_per_rank": a.steps if a.mode == "graph" else 0,
    }


def run(rank, a):
    tp = a.tp
    dev = torch.device("cuda", rank)
    torch.cuda.set_device(dev)
    cpu_group = None
    if tp > 1:
        import torch.distributed as dist
        dist.init_process_group("nccl", rank=rank, world_size=tp, device_id=dev)
        cpu_group = dist.new_group(backend="gloo")

    def barrier():
        if cpu_group is not None:
            import torch.distributed as dist
            dist.barrier(group=cpu_group)  # gloo: no GPU work

    torch.manual_seed(a.seed)
    m = Model(a, rank, tp, dev)

    def capture_graph():
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            m.decode_step()          # one decode step, static buffers tokens/pos
        torch.cuda.synchronize()
        return g

    graph = None
    if not a.serve_order:
        # ---- warm-up (not measured): prefill + some decode steps, on a side stream ----
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            m.prefill()
            for _ in range(a.warmup):
                m.decode_step()
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        if a.mode == "graph":
            graph = capture_graph()
        m.pos.fill_(a.prefill_len)
    m.nvtx_route = a.nvtx
    torch.cuda.synchronize()
    barrier()

    # ---- measured region: prefill + N decode steps ----
    torch.cuda.cudart().cudaProfilerStart()
    sampled = []
    nvtx_push(a.nvtx, "prefill")
    m.prefill()
    sampled.append(m.tokens.cpu().tolist())      # host read-back (D2H)
    nvtx_pop(a.nvtx)
    if a.serve_order:
        # A server's warm-up after the prefill: eager decode steps with their read-backs,
        # outside any step range, then the graph capture (which runs nothing).
        m.nvtx_route = False
        for _ in range(a.warmup):
            m.decode_step()
            m.tokens.cpu()
        if a.mode == "graph":
            graph = capture_graph()
        m.nvtx_route = a.nvtx
    for i in range(a.steps):
        nvtx_push(a.nvtx, "decode_step %d" % i)
        if graph is not None:
            graph.replay()
        else:
            m.decode_step()
        sampled.append(m.tokens.cpu().tolist())  # host read-back (D2H)
        nvtx_pop(a.nvtx)
    torch.cuda.synchronize()
    if a.serve_order:
        import time
        time.sleep(0.015)
        m.pos.fill_(0)               # one post-loop kernel, 15 ms after the last step
        torch.cuda.synchronize()
    barrier()
    torch.cuda.cudart().cudaProfilerStop()

    if rank == 0:
        summary = {
            "workload": "stepstat-decode",
            "layers": a.layers, "steps": a.steps, "prefill_steps": 1, "mode": a.mode,
            "mlp": a.mlp, "tp": tp, "nvtx": a.nvtx, "batch": a.batch,
            "prefill_len": a.prefill_len, "max_seq": a.max_seq, "hidden": a.hidden,
            "heads": a.heads, "ffn": a.ffn, "experts": a.experts if a.mlp == "moe" else 0,
            "topk": a.topk if a.mlp == "moe" else 0, "expert_ffn": a.expert_ffn,
            "vocab": a.vocab, "design": design(a),
            "sampled_tok0": [t[0] for t in sampled],
            "torch": torch.__version__,
            "nccl": nccl_version(),
        }
        print(json.dumps(summary, separators=(",", ":")), flush=True)
    sys.stdout.flush()
    if tp > 1 and a.mode == "graph":
        # NCCL teardown after graph capture can hang: the trace is flushed at the stop.
        os._exit(0)
    if tp > 1:
        # Eager: exit cleanly. capture.sh records these until the processes exit
        # (--capture-range-end=none): with "stop", the first rank's cudaProfilerStop ended
        # the capture while the other rank's last activity was still buffered, and it was
        # lost (seen: a rank missing its last 2 to 7 steps).
        barrier()
        import torch.distributed as dist
        dist.destroy_process_group()


def main():
    a = parse_args()
    if a.tp == 1:
        run(0, a)
    else:
        import torch.multiprocessing as mp
        assert torch.cuda.device_count() >= a.tp, "need %d GPUs" % a.tp
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(a.port))
        mp.spawn(run, args=(a,), nprocs=a.tp, join=True)


if __name__ == "__main__":
    main()
