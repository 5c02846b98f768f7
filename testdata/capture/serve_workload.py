#!/usr/bin/env python3
"""Serving situations for Nsight Systems captures (testdata/traces/README.md, "Serving situations").

Each case runs one situation that a real server runs, on a random-weight model (transformers'
config registry via AutoConfig.for_model, or testdata/capture/workload.py's own model; nothing is
downloaded), and writes a ground-truth sidecar JSON (--truth) of what it did: every forward with
its model (target/draft), input shape (batch, tokens), phase (prefill/decode/mixed) and the
iteration, request or speculative round it belongs to.

  multireq   3 generate() calls back to back (eager), different prompt/output lengths, 0.2 s apart
  cb         transformers continuous batching (paged attention, chunked prefill, requests added
             while others decode), eager (no CUDA graphs)
  assisted   generate(assistant_model=small draft of the same vocabulary, num_assistant_tokens=4)
  lookup     generate(prompt_lookup_num_tokens=4) on a prompt that repeats itself
  batchgrow  hand loop over model(...) with a DynamicCache: batch 2, then 2 more sequences join
             (their prefill, caches concatenated) and the loop goes on at batch 4
  generate   one eager generate() (used for a MoE family: hf-moe-eager)
  cudnn      own eager decode loop, attention through cuDNN SDPA (sdpa_kernel(CUDNN_ATTENTION)),
             KV length grows by one each step (a new cuDNN plan per length)
  slowstep   workload.py's model, eager decode loop; one step sleeps 0.5 s between two layers
  wl         workload.py's own loop (dense/moe, eager/graph), with a truth sidecar

Only the measured region lies between cudaProfilerStart/Stop; an identical (or, for cudnn, a
shorter) run warms up before it. Ground-truth marker (test scaffolding, not a serving signal): a
forward pre-hook calls torch.cuda.mem_get_info() (cudaMemGetInfo: no GPU work, no sync) once per
forward, so SQL can cut the timeline into forwards; the analyzer must give the same answer with
those rows deleted. --no-marker leaves it out.
"""
import argparse
import inspect
import json
import os
import sys
import time
import traceback

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")

import torch

HERE = os.path.dirname(os.path.abspath(__file__))

COMMON = dict(vocab_size=32000, max_position_embeddings=4096, tie_word_embeddings=False,
              pad_token_id=0, bos_token_id=1, eos_token_id=None)
SHRINK = {
    "llama": dict(num_hidden_layers=4, hidden_size=1024, intermediate_size=2816,
                  num_attention_heads=16, num_key_value_heads=4, head_dim=64),
    "qwen2": dict(num_hidden_layers=4, hidden_size=1024, intermediate_size=2816,
                  num_attention_heads=16, num_key_value_heads=4, use_sliding_window=False),
    "phi3": dict(num_hidden_layers=4, hidden_size=1024, intermediate_size=2816,
                 num_attention_heads=16, num_key_value_heads=4),
    "phi3-draft": dict(num_hidden_layers=1, hidden_size=256, intermediate_size=512,
                       num_attention_heads=4, num_key_value_heads=4),
    "olmo2": dict(num_hidden_layers=4, hidden_size=1024, intermediate_size=2816,
                  num_attention_heads=16, num_key_value_heads=4),
    "granite": dict(num_hidden_layers=4, hidden_size=1024, intermediate_size=2816,
                    num_attention_heads=16, num_key_value_heads=4),
    "olmoe": dict(num_hidden_layers=4, hidden_size=1024, intermediate_size=512,
                  num_experts=16, num_experts_per_tok=4, num_attention_heads=16,
                  num_key_value_heads=16),
    "qwen2_moe": dict(num_hidden_layers=4, hidden_size=1024, intermediate_size=2048,
                      moe_intermediate_size=512, shared_expert_intermediate_size=1024,
                      num_experts=16, num_experts_per_tok=4, decoder_sparse_step=1,
                      mlp_only_layers=[], num_attention_heads=16, num_key_value_heads=4,
                      use_sliding_window=False),
}


def log(*a):
    print("[serve_workload]", *a, file=sys.stderr, flush=True)


class Recorder:
    """Ground truth: one record per forward, in launch order, plus the context (request, round)."""

    def __init__(self, marker=True):
        self.marker = marker
        self.forwards = []
        self.on = False
        self.ctx = {}
        self.extra = None  # callable returning a dict to merge (continuous batching's schedule)

    def hook(self, label, past=True):
        def pre(mod, args, kwargs):
            if not self.on:
                return
            if self.marker:
                torch.cuda.mem_get_info()  # cudaMemGetInfo: the ground-truth forward boundary
            x = kwargs.get("input_ids")
            if x is None and args:
                x = args[0]
            if x is None:
                x = kwargs.get("inputs_embeds")
            shape = list(x.shape) if x is not None else None
            rec = {"i": len(self.forwards), "model": label, "shape": shape,
                   "batch": shape[0] if shape else None,
                   "tokens": shape[1] if shape and len(shape) > 1 else None,
                   "t_ns": time.monotonic_ns()}
            if past:
                pkv = kwargs.get("past_key_values")
                try:
                    rec["past"] = int(pkv.get_seq_length()) if pkv is not None else 0
                except Exception:
                    rec["past"] = None
            rec.update(self.ctx)
            if self.extra is not None:
                try:
                    rec.update(self.extra())
                except Exception as e:  # pragma: no cover
                    rec["extra_error"] = repr(e)
            self.forwards.append(rec)
        return pre

    def attach(self, model, label, past=True):
        inner = getattr(model, "model", None)
        target = inner if isinstance(inner, torch.nn.Module) else model
        target.register_forward_pre_hook(self.hook(label, past), with_kwargs=True)
        return type(target).__name__


def build_hf(family, dev, seed=1234, **over):
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM
    torch.manual_seed(seed)
    base = family.split("-")[0]
    kw = dict(COMMON)
    kw.update(SHRINK[family])
    kw.update(over)
    cfg = AutoConfig.for_model(base, **kw)
    m = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    return m.to(dev).eval(), m.config


def prof_start(a):
    torch.cuda.synchronize()
    if not a.probe:
        torch.cuda.cudart().cudaProfilerStart()


def prof_stop(a):
    torch.cuda.synchronize()
    if not a.probe:
        torch.cuda.cudart().cudaProfilerStop()


def gen_kwargs(n):
    return dict(max_new_tokens=n, min_new_tokens=n, do_sample=False, eos_token_id=None,
                pad_token_id=0, disable_compile=True)


def rand_prompt(vocab, b, n, seed, dev):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(2, vocab, (b, n), generator=g).to(dev)


def label_generate(fw, key="request"):
    """prefill = first forward of each request (tokens = prompt), decode = the rest."""
    seen = set()
    for f in fw:
        k = f.get(key)
        f["phase"] = "prefill" if k not in seen else "decode"
        seen.add(k)


# ---------------------------------------------------------------------------------------------
def case_multireq(a, dev, rec, info):
    model, cfg = build_hf(a.family or "llama", dev)
    info["hook_on"] = rec.attach(model, "target")
    reqs = [dict(prompt=64, new=12), dict(prompt=200, new=8), dict(prompt=32, new=16)]
    if a.probe:
        reqs = [dict(prompt=16, new=2), dict(prompt=8, new=2)]
    prompts = [rand_prompt(cfg.vocab_size, 1, r["prompt"], a.seed + i, dev) for i, r in enumerate(reqs)]

    def serve():
        outs = []
        for i, (r, p) in enumerate(zip(reqs, prompts)):
            if i:
                time.sleep(0.2)  # host pause between requests (nothing on the GPU)
            rec.ctx = {"request": i}
            with torch.no_grad():
                o = model.generate(p, attention_mask=torch.ones_like(p), **gen_kwargs(r["new"]))
            outs.append(o.shape[1] - p.shape[1])
        return outs

    serve()  # warm-up
    rec.on = True
    prof_start(a)
    outs = serve()
    prof_stop(a)
    rec.on = False
    label_generate(rec.forwards)
    info["requests"] = [dict(request=i, prompt_len=r["prompt"], output_len=o,
                             forwards=[f["i"] for f in rec.forwards if f["request"] == i])
                        for i, (r, o) in enumerate(zip(reqs, outs))]
    info["host_pause_s"] = 0.2
    info["family"] = cfg.model_type


def case_generate(a, dev, rec, info):
    fam = a.family or "olmoe"
    try:
        model, cfg = build_hf(fam, dev)
    except Exception as e:
        log("build", fam, "failed:", repr(e), "-> qwen2_moe")
        fam = "qwen2_moe"
        model, cfg = build_hf(fam, dev)
    info["hook_on"] = rec.attach(model, "target")
    n = 2 if a.probe else a.new_tokens
    p = rand_prompt(cfg.vocab_size, 1, a.prompt_len, a.seed, dev)
    rec.ctx = {"request": 0}

    def go():
        with torch.no_grad():
            return model.generate(p, attention_mask=torch.ones_like(p), **gen_kwargs(n))
    go()
    rec.on = True
    prof_start(a)
    o = go()
    prof_stop(a)
    rec.on = False
    label_generate(rec.forwards)
    info["requests"] = [dict(request=0, prompt_len=a.prompt_len, output_len=o.shape[1] - a.prompt_len,
                             forwards=[f["i"] for f in rec.forwards])]
    info["family"] = cfg.model_type
    for k in ("num_experts", "num_experts_per_tok", "num_hidden_layers"):
        info[k] = getattr(cfg, k, None)
    info["experts_impl"] = getattr(cfg, "_experts_implementation", None)
    info["attn_impl"] = getattr(cfg, "_attn_implementation", None)


def rounds_from(fw):
    """Speculative rounds: each target forward closes a round holding the draft forwards since the
    previous target forward. Round 0 holds the prompt (phase prefill), the others are decode."""
    rounds, cur = [], []
    for f in fw:
        cur.append(f["i"])
        if f["model"] == "target":
            r = len(rounds)
            drafts = [j for j in cur if fw[j]["model"] == "draft"]
            rounds.append(dict(round=r, forwards=list(cur), draft_forwards=len(drafts),
                               verify_forward=f["i"], verify_tokens=f["tokens"],
                               past=f.get("past"), phase="prefill" if r == 0 else "decode"))
            cur = []
    for r in rounds:
        for j in r["forwards"]:
            fw[j]["round"] = r["round"]
            fw[j]["phase"] = r["phase"] if fw[j]["model"] == "target" else (
                "prefill" if fw[j].get("past") == 0 else "decode")
    # tokens the round added to the sequence = next round's past - this round's past
    for r, nxt in zip(rounds, rounds[1:]):
        if r["past"] is not None and nxt["past"] is not None:
            r["tokens_added"] = nxt["past"] - r["past"]
    if cur:
        for j in cur:
            fw[j]["round"] = None
    return rounds


def case_assisted(a, dev, rec, info):
    model, cfg = build_hf(a.family or "phi3", dev)
    draft, dcfg = build_hf((a.family or "phi3") + "-draft", dev, seed=a.seed + 7)
    info["hook_on"] = rec.attach(model, "target")
    rec.attach(draft, "draft")
    k = 4
    for gc in (draft.generation_config,):
        gc.num_assistant_tokens = k
        gc.num_assistant_tokens_schedule = "constant"
        if hasattr(gc, "assistant_confidence_threshold"):
            gc.assistant_confidence_threshold = 0.0
    n = 3 if a.probe else a.new_tokens
    p = rand_prompt(cfg.vocab_size, 1, a.prompt_len, a.seed, dev)
    rec.ctx = {"request": 0}

    def go():
        kw = gen_kwargs(n)
        kw.update(num_assistant_tokens=k, num_assistant_tokens_schedule="constant")
        if hasattr(model.generation_config, "assistant_confidence_threshold"):
            kw["assistant_confidence_threshold"] = 0.0
        with torch.no_grad():
            return model.generate(p, attention_mask=torch.ones_like(p), assistant_model=draft, **kw)
    go()
    rec.on = True
    prof_start(a)
    o = go()
    prof_stop(a)
    rec.on = False
    info["rounds"] = rounds_from(rec.forwards)
    info["num_assistant_tokens"] = k
    info["requests"] = [dict(request=0, prompt_len=a.prompt_len, output_len=o.shape[1] - a.prompt_len)]
    info["family"] = cfg.model_type
    info["draft"] = dict(family=dcfg.model_type, layers=dcfg.num_hidden_layers, hidden=dcfg.hidden_size)


def case_lookup(a, dev, rec, info):
    model, cfg = build_hf(a.family or "olmo2", dev)
    info["hook_on"] = rec.attach(model, "target")
    n = 3 if a.probe else a.new_tokens
    pat = rand_prompt(cfg.vocab_size, 1, 16, a.seed, dev)
    reps = max(1, a.prompt_len // 16)
    p = pat.repeat(1, reps)
    # Make the prompt contain what the model tends to generate, so lookups find matches: the
    # greedy continuation of the pattern, appended to the pattern before repeating.
    with torch.no_grad():
        g = model.generate(pat, attention_mask=torch.ones_like(pat), **gen_kwargs(8))
    p = g.repeat(1, max(1, a.prompt_len // g.shape[1]))
    rec.ctx = {"request": 0}

    def go():
        with torch.no_grad():
            return model.generate(p, attention_mask=torch.ones_like(p), prompt_lookup_num_tokens=4,
                                  **gen_kwargs(n))
    go()
    rec.on = True
    prof_start(a)
    o = go()
    prof_stop(a)
    rec.on = False
    info["rounds"] = rounds_from(rec.forwards)
    info["prompt_lookup_num_tokens"] = 4
    info["requests"] = [dict(request=0, prompt_len=p.shape[1], output_len=o.shape[1] - p.shape[1])]
    info["family"] = cfg.model_type


def cache_cat(c1, c2):
    """Concatenate two DynamicCaches along the batch (same lengths)."""
    if hasattr(c1, "layers"):
        for l1, l2 in zip(c1.layers, c2.layers):
            l1.keys = torch.cat([l1.keys, l2.keys], 0)
            l1.values = torch.cat([l1.values, l2.values], 0)
        return c1
    for i in range(len(c1.key_cache)):
        c1.key_cache[i] = torch.cat([c1.key_cache[i], c2.key_cache[i]], 0)
        c1.value_cache[i] = torch.cat([c1.value_cache[i], c2.value_cache[i]], 0)
    return c1


def case_batchgrow(a, dev, rec, info):
    import transformers
    model, cfg = build_hf(a.family or "granite", dev)
    info["hook_on"] = rec.attach(model, "target")
    P, S = (16, 2) if a.probe else (64, a.steps // 2)
    pa = rand_prompt(cfg.vocab_size, 2, P, a.seed, dev)
    pb = rand_prompt(cfg.vocab_size, 2, P + S, a.seed + 1, dev)  # same length as A's sequences then

    def loop():
        out = []
        with torch.no_grad():
            ca = transformers.DynamicCache(config=cfg)
            rec.ctx = {"iteration": 0, "requests": [0, 1]}
            lo = model(input_ids=pa, past_key_values=ca, use_cache=True).logits
            tok = lo[:, -1].argmax(-1).cpu()
            out.append(tok.tolist())
            it = 1
            for _ in range(S):
                rec.ctx = {"iteration": it, "requests": [0, 1]}
                lo = model(input_ids=tok.view(-1, 1).to(dev), past_key_values=ca, use_cache=True).logits
                tok = lo[:, -1].argmax(-1).cpu()
                out.append(tok.tolist())
                it += 1
            cb = transformers.DynamicCache(config=cfg)
            rec.ctx = {"iteration": it, "requests": [2, 3]}
            lo = model(input_ids=pb, past_key_values=cb, use_cache=True).logits
            tb = lo[:, -1].argmax(-1).cpu()
            it += 1
            cache = cache_cat(ca, cb)
            tok = torch.cat([tok, tb])
            for _ in range(S):
                rec.ctx = {"iteration": it, "requests": [0, 1, 2, 3]}
                lo = model(input_ids=tok.view(-1, 1).to(dev), past_key_values=cache, use_cache=True).logits
                tok = lo[:, -1].argmax(-1).cpu()
                out.append(tok.tolist())
                it += 1
        return out

    loop()
    rec.on = True
    prof_start(a)
    loop()
    prof_stop(a)
    rec.on = False
    for f in rec.forwards:
        f["phase"] = "prefill" if f["tokens"] > 1 else "decode"
    info["requests"] = [dict(request=0, prompt_len=P, output_len=2 * S + 1),
                        dict(request=1, prompt_len=P, output_len=2 * S + 1),
                        dict(request=2, prompt_len=P + S, output_len=S + 1),
                        dict(request=3, prompt_len=P + S, output_len=S + 1)]
    info["batch_by_iteration"] = [f["batch"] for f in rec.forwards]
    info["family"] = cfg.model_type
    info["per_step_io"] = "H2D copy of the tokens before each decode forward, D2H read-back after each forward"


def summarise_state(s):
    d = {"id": getattr(s, "request_id", None)}
    st = getattr(s, "status", None)
    if st is None:
        st = getattr(s, "_status", None)
    d["status"] = getattr(st, "name", str(st))
    for attr in ("tokens_to_process", "prompt_ids", "remaining_prefill_tokens", "remaining_prompt_ids"):
        v = getattr(s, attr, None)
        if isinstance(v, (list, tuple)):
            d[attr] = len(v)
    for attr in ("position_offset", "num_generated", "max_new_tokens"):
        v = getattr(s, attr, None)
        if isinstance(v, int):
            d[attr] = v
    g = getattr(s, "generated_tokens", None)
    if g is None:
        g = getattr(s, "static_outputs", None)
    if isinstance(g, (list, tuple)):
        d["generated"] = len(g)
    return d


def case_cb(a, dev, rec, info):
    import transformers
    from transformers import GenerationConfig
    fam = a.family or "qwen2"
    model, cfg = build_hf(fam, dev)
    info["hook_on"] = rec.attach(model, "target", past=False)
    sig = str(inspect.signature(model.init_continuous_batching))
    info["init_continuous_batching_signature"] = sig
    log("init_continuous_batching", sig)
    try:
        log("generate_batch", inspect.signature(model.generate_batch))
    except Exception as e:
        log("generate_batch sig", repr(e))
    CBC = None
    for modname in ("transformers", "transformers.generation", "transformers.generation.configuration_utils",
                    "transformers.generation.continuous_batching",
                    "transformers.generation.continuous_batching.continuous_api"):
        try:
            mod = __import__(modname, fromlist=["ContinuousBatchingConfig"])
            CBC = getattr(mod, "ContinuousBatchingConfig", None)
            if CBC is not None:
                info["cbc_from"] = modname
                break
        except Exception:
            pass
    # record what each scheduler iteration held: wrap every scheduler's schedule_batch
    last = {"batch": None}
    try:
        from transformers.generation.continuous_batching import scheduler as schedmod
        classes = [c for c in vars(schedmod).values() if isinstance(c, type) and "schedule_batch" in vars(c)]
        for c in classes:
            orig = c.schedule_batch

            def wrapped(self, *args, __orig=orig, **kw):
                res = __orig(self, *args, **kw)
                reqs = res[0] if isinstance(res, tuple) else res
                try:
                    last["batch"] = [summarise_state(s) for s in (reqs or [])]
                    if isinstance(res, tuple):
                        last["schedule_extra"] = [x for x in res[1:] if isinstance(x, (int, bool))]
                except Exception as e:
                    last["batch"] = repr(e)
                return res
            c.schedule_batch = wrapped
        info["patched_schedulers"] = [c.__name__ for c in classes]
    except Exception as e:
        info["patched_schedulers"] = repr(e)
    rec.extra = lambda: {"scheduled": last["batch"], "schedule_extra": last.get("schedule_extra")}

    gc = GenerationConfig(max_new_tokens=32, do_sample=False, eos_token_id=None, pad_token_id=0)
    cbkw = dict(use_cuda_graph=False, use_async_batching=False, max_batch_tokens=256,
                num_blocks=64, max_blocks_per_request=0, allow_block_sharing=False,
                page_size=64, max_requests_per_batch=8)
    params = inspect.signature(model.init_continuous_batching).parameters
    first = [dict(prompt=300, new=24), dict(prompt=120, new=30), dict(prompt=60, new=20), dict(prompt=90, new=28)]
    later = [dict(prompt=200, new=16), dict(prompt=40, new=24), dict(prompt=80, new=12)]
    if a.probe:
        first, later = [dict(prompt=20, new=3), dict(prompt=300, new=2)], [dict(prompt=10, new=2)]
    allr = first + later
    prompts = [rand_prompt(cfg.vocab_size, 1, r["prompt"], a.seed + i, dev)[0].tolist() for i, r in enumerate(allr)]

    def make_mgr():
        if "continuous_batching_config" in params and CBC is not None:
            fields = set(getattr(CBC, "__dataclass_fields__", {}) or inspect.signature(CBC).parameters)
            kw = {k: v for k, v in cbkw.items() if k in fields}
            if "page_size" not in fields and "block_size" in fields:
                kw["block_size"] = 64
            info["cb_config"] = kw
            return model.init_continuous_batching(generation_config=gc, continuous_batching_config=CBC(**kw))
        kw = {}
        for k, v in dict(manual_eviction=False, max_queue_size=0, streaming=False).items():
            if k in params:
                kw[k] = v
        for k in ("use_cuda_graph", "max_batch_tokens", "num_blocks", "block_size"):
            if k in params:
                kw[k] = dict(use_cuda_graph=False, max_batch_tokens=256, num_blocks=64, block_size=64)[k]
        info["cb_config"] = kw
        gc.num_blocks, gc.block_size, gc.max_batch_tokens = 64, 64, 256
        return model.init_continuous_batching(generation_config=gc, **kw)

    addp = None

    def serve(timed):
        nonlocal addp
        mgr = make_mgr()
        if addp is None:
            addp = set(inspect.signature(mgr.add_request).parameters)
            log("add_request", inspect.signature(mgr.add_request))
        added = []

        def add(i):
            kw = dict(input_ids=prompts[i], request_id="req_%d" % i, max_new_tokens=allr[i]["new"])
            if "eos_token_id" in addp:
                kw["eos_token_id"] = -1
            added.append((i, time.monotonic_ns(), len(rec.forwards)))
            mgr.add_request(**kw)
        mgr.start()
        for i in range(len(first)):
            add(i)
        # the later requests arrive while the first ones decode
        t0 = time.time()
        while len(rec.forwards) < 12 and time.time() - t0 < 5 and timed:
            time.sleep(0.002)
        if not timed:
            time.sleep(0.3)
        for j in range(len(later)):
            add(len(first) + j)
            if timed:
                t1 = time.time()
                n0 = len(rec.forwards)
                while len(rec.forwards) < n0 + 3 and time.time() - t1 < 3:
                    time.sleep(0.002)
        results = {}
        deadline = time.time() + 25
        while len(results) < len(allr) and time.time() < deadline:
            r = mgr.get_result(timeout=1)
            if r is None and hasattr(mgr, "is_running") and not mgr.is_running():
                log("manager stopped with", len(results), "results")
                break
            if r is not None:
                rid = getattr(r, "request_id", None)
                results[rid] = r
        mgr.stop(block=True)
        return added, results

    rec.on = False
    serve(False)  # warm-up (also compiles nothing: eager)
    rec.forwards.clear()
    rec.on = True
    prof_start(a)
    added, results = serve(True)
    prof_stop(a)
    rec.on = False
    reqs = []
    for i, t, nfw in added:
        r = results.get("req_%d" % i)
        gen = None
        if r is not None:
            for attr in ("generated_tokens", "static_outputs", "output_ids"):
                v = getattr(r, attr, None)
                if isinstance(v, (list, tuple)):
                    gen = len(v)
                    break
        reqs.append(dict(request=i, request_id="req_%d" % i, prompt_len=allr[i]["prompt"],
                         max_new_tokens=allr[i]["new"], output_len=gen, added_t_ns=t,
                         added_after_forwards=nfw, status=str(getattr(r, "status", None))))
    info["requests"] = reqs
    # phase of each iteration from what the scheduler held
    for f in rec.forwards:
        sch = f.get("scheduled")
        if isinstance(sch, list) and sch:
            st = [s["status"] for s in sch]
            dec = [x == "DECODING" for x in st]
            f["n_requests"] = len(sch)
            f["phase"] = "decode" if all(dec) else ("prefill" if not any(dec) else "mixed")
        else:
            f["phase"] = None
    info["iterations"] = len(rec.forwards)
    info["family"] = cfg.model_type
    info["attn_impl"] = getattr(model.config, "_attn_implementation", None)
    info["note"] = ("one forward per scheduler iteration; 'scheduled' is what the scheduler put in that batch "
                    "(status at scheduling: PREFILLING*/DECODING), 'tokens' the flattened query tokens")


# ---------------------------------------------------------------------------------------------
def case_cudnn(a, dev, rec, info):
    """Own eager decode loop whose attention runs through cuDNN SDPA, KV length growing per step."""
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel, SDPBackend
    torch.manual_seed(a.seed)
    L, H, nh, B, V = 4, 1024, 8, 1, 32000
    hd = H // nh
    P, N = (a.prompt_len, 2 if a.probe else a.steps)
    S = P + N + 64
    bf = torch.bfloat16

    def rnd(*s):
        return (torch.randn(*s, device=dev) * 0.02).to(bf)
    emb, wqkv, wo = rnd(V, H), [rnd(H, 3 * H) for _ in range(L)], [rnd(H, H) for _ in range(L)]
    wgu, wd, wlm = [rnd(H, 5632) for _ in range(L)], [rnd(2816, H) for _ in range(L)], rnd(H, V)
    ln = torch.ones(H, device=dev, dtype=bf)
    kc = [torch.zeros(B, nh, S, hd, device=dev, dtype=bf) for _ in range(L)]
    vc = [torch.zeros(B, nh, S, hd, device=dev, dtype=bf) for _ in range(L)]

    class Fwd(torch.nn.Module):
        def forward(self, input_ids, pos):
            T = input_ids.shape[1]
            x = F.embedding(input_ids.view(-1), emb)
            for l in range(L):
                h = F.rms_norm(x, (H,), ln, 1e-6)
                q, k, v = (h @ wqkv[l]).view(B, T, 3, nh, hd).permute(2, 0, 3, 1, 4).unbind(0)
                kc[l][:, :, pos:pos + T].copy_(k)
                vc[l][:, :, pos:pos + T].copy_(v)
                kk, vv = kc[l][:, :, :pos + T], vc[l][:, :, :pos + T]
                if self.contig:
                    q, kk, vv = q.contiguous(), kk.contiguous(), vv.contiguous()
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    o = F.scaled_dot_product_attention(q, kk, vv, is_causal=T > 1)
                x = x + o.transpose(1, 2).reshape(B * T, H) @ wo[l]
                h = F.rms_norm(x, (H,), ln, 1e-6)
                g, u = (h @ wgu[l]).chunk(2, -1)
                x = x + (F.silu(g) * u) @ wd[l]
            return (F.rms_norm(x.view(B, T, H)[:, -1], (H,), ln, 1e-6) @ wlm).argmax(-1)
    fwd = Fwd()
    rec.attach(fwd, "target", past=False)

    def loop(plen, n):
        p = rand_prompt(V, B, plen, a.seed, dev)
        fwd.contig = contig
        rec.ctx = {"iteration": 0}
        tok = fwd(p, 0).cpu()
        for i in range(n):
            rec.ctx = {"iteration": i + 1, "kv_len": plen + i + 1}
            tok = fwd(tok.view(B, 1).to(dev), plen + i).cpu()
    contig = False
    with torch.no_grad():
        try:
            loop(P // 2, 4)  # warm-up at other lengths: the measured lengths are new to cuDNN
        except RuntimeError as e:
            log("cuDNN SDPA on strided K/V failed (%r): contiguous copies" % (e,))
            contig = True
            loop(P // 2, 4)
        info["contiguous_copies"] = contig
        rec.forwards.clear()
        rec.on = True
        prof_start(a)
        loop(P, N)
        prof_stop(a)
    rec.on = False
    for f in rec.forwards:
        f["phase"] = "prefill" if f["tokens"] > 1 else "decode"
    info.update(layers=L, hidden=H, heads=nh, batch=B, prompt_len=P, decode_steps=N,
                attention="cuDNN SDPA (sdpa_kernel(SDPBackend.CUDNN_ATTENTION)), K/V sliced to the "
                          "current length: one new sequence length per step",
                warmup_lengths="prompt %d + 4 decode steps (lengths %d..%d)" % (P // 2, P // 2 + 1, P // 2 + 4),
                per_step_io="H2D token copy before each decode forward, D2H read-back after each forward")
    info["requests"] = [dict(request=0, prompt_len=P, output_len=N + 1)]


def workload_mod():
    sys.path.insert(0, HERE)
    import workload
    return workload


def case_slowstep(a, dev, rec, info):
    wl = workload_mod()
    wa = wl.parse_args(["--mode", "eager", "--mlp", "dense", "--steps", str(2 if a.probe else a.steps)])
    torch.manual_seed(wa.seed)
    m = wl.Model(wa, 0, 1, dev)
    slow = {"on": False}
    orig_layer = m.layer
    sleep_s = 0.5

    def layer(l, x, attn):
        if slow["on"] and l == 2:
            time.sleep(sleep_s)  # a host pause in the middle of the step's launches
        return orig_layer(l, x, attn)
    m.layer = layer
    slow_step = min(wa.steps - 1, 7)

    def fwd_prefill():
        if rec.on and rec.marker:
            torch.cuda.mem_get_info()
        rec.forwards.append(dict(i=len(rec.forwards), model="target", batch=wa.batch, tokens=wa.prefill_len,
                                 phase="prefill", iteration=0)) if rec.on else None
        m.prefill()

    def fwd_decode(i):
        if rec.on and rec.marker:
            torch.cuda.mem_get_info()
        if rec.on:
            rec.forwards.append(dict(i=len(rec.forwards), model="target", batch=wa.batch, tokens=1,
                                     phase="decode", iteration=i + 1, slow=(i == slow_step)))
        m.decode_step()

    def loop():
        fwd_prefill()
        m.tokens.cpu()
        for i in range(wa.steps):
            slow["on"] = rec.on and i == slow_step
            fwd_decode(i)
            slow["on"] = False
            m.tokens.cpu()
    with torch.no_grad():
        loop()
        m.pos.fill_(wa.prefill_len)
        rec.on = True
        prof_start(a)
        loop()
        prof_stop(a)
        rec.on = False
    info.update(layers=wa.layers, batch=wa.batch, prompt_len=wa.prefill_len, decode_steps=wa.steps,
                slow_decode_step=slow_step, slow_iteration=slow_step + 1, sleep_s=sleep_s,
                sleep_where="host time.sleep before layer 2 of 4 of that decode step (after layers 0-1 launched)",
                model="testdata/capture/workload.py Model, dense, eager",
                per_step_io="D2H read-back of the sampled tokens after each forward")
    info["requests"] = [dict(request=0, batch=wa.batch, prompt_len=wa.prefill_len, output_len=wa.steps + 1)]


def case_wl(a, dev, rec, info):
    """workload.py's own loop; truth from its arguments (structure by construction)."""
    wl = workload_mod()
    wa = wl.parse_args(a.wl_args.split())
    if a.probe:
        wa.steps = 2
    import io
    import contextlib
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        wl.run(0, wa)
    out = buf.getvalue()
    sys.stdout.write(out)
    summ = None
    for line in out.splitlines():
        if line.startswith('{"workload"'):
            summ = json.loads(line)
    rec.forwards = [dict(i=0, model="target", batch=wa.batch, tokens=wa.prefill_len, phase="prefill", iteration=0)]
    for i in range(wa.steps):
        rec.forwards.append(dict(i=i + 1, model="target", batch=wa.batch, tokens=1, phase="decode",
                                 iteration=i + 1, graph_replay=wa.mode == "graph"))
    info["workload_args"] = a.wl_args
    info["workload_summary"] = summ
    info["marker"] = False
    info["note"] = ("workload.py adds no marker: each forward ends with its D2H read-back of the sampled "
                    "tokens (1 + steps D2H copies); graph mode: one cudaGraphLaunch per decode step")
    info["requests"] = [dict(request=0, batch=wa.batch, prompt_len=wa.prefill_len, output_len=wa.steps + 1)]


CASES = dict(multireq=case_multireq, cb=case_cb, assisted=case_assisted, lookup=case_lookup,
             batchgrow=case_batchgrow, generate=case_generate, cudnn=case_cudnn, slowstep=case_slowstep,
             wl=case_wl)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--case", required=True, choices=sorted(CASES))
    p.add_argument("--family")
    p.add_argument("--truth", help="write the ground-truth JSON here")
    p.add_argument("--name", default="")
    p.add_argument("--new-tokens", type=int, default=16)
    p.add_argument("--prompt-len", type=int, default=128)
    p.add_argument("--steps", type=int, default=24)
    p.add_argument("--wl-args", default="--mode eager --mlp dense")
    p.add_argument("--probe", action="store_true", help="tiny sizes, no profiler calls")
    p.add_argument("--no-marker", action="store_true")
    p.add_argument("--seed", type=int, default=1234)
    a = p.parse_args()
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    rec = Recorder(marker=not a.no_marker)
    info = {"name": a.name, "case": a.case, "probe": a.probe, "marker": not a.no_marker,
            "marker_note": ("one cudaMemGetInfo (torch.cuda.mem_get_info in a forward pre-hook) per forward, "
                            "test scaffolding: the analyzer must give the same result without those rows")}
    t0 = time.time()
    CASES[a.case](a, dev, rec, info)
    info["measured_wall_s"] = round(time.time() - t0, 2)
    try:
        import transformers
        info["transformers"] = transformers.__version__
    except Exception:
        pass
    info["torch"] = torch.__version__
    fw = rec.forwards
    info["forwards"] = fw
    info["counts"] = {
        "forwards": len(fw),
        "target_forwards": sum(1 for f in fw if f["model"] == "target"),
        "draft_forwards": sum(1 for f in fw if f["model"] == "draft"),
        "prefill": sum(1 for f in fw if f.get("phase") == "prefill" and f["model"] == "target"),
        "decode": sum(1 for f in fw if f.get("phase") == "decode" and f["model"] == "target"),
        "mixed": sum(1 for f in fw if f.get("phase") == "mixed"),
        "rounds": len(info["rounds"]) if "rounds" in info else None,
        "requests": len(info.get("requests", [])),
    }
    s = json.dumps(info, indent=1)
    if a.truth:
        with open(a.truth, "w") as f:
            f.write(s + "\n")
    print(json.dumps({"workload": "serve", "name": a.name, "case": a.case, "counts": info["counts"],
                      "shapes": [(f["model"][0], f.get("batch"), f.get("tokens"), (f.get("phase") or "?")[0])
                                 for f in fw][:80]}), flush=True)


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        sys.exit(1)
