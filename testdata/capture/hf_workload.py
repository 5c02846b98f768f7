#!/usr/bin/env python3
"""Decode loops of a stack we did not write, for Nsight Systems captures (testdata/traces/README.md).

Hugging Face transformers' own code drives the GPU here: a random-weight model built offline
from transformers' config registry (AutoConfig.for_model + from_config; nothing downloaded),
then either transformers' `generate()` or a hand-written decode loop over the model's forward.

  --loop generate   model.generate(): the plain eager loop (dynamic cache), or with
                    --compile the static cache + torch.compile(mode="reduce-overhead")
                    (CUDA graph trees), as transformers sets them up.
  --loop h2d        each step: H2D copy of the sampled token ids -> forward -> argmax -> D2H.
  --loop 2sync      each step: a host read of the attention-mask length (.item(), a sync with
                    one small kernel before it) -> forward -> argmax -> D2H read-back.

Only the measured call lies between cudaProfilerStart/Stop; a first identical call warms up
(and compiles) before it. Ground-truth marker, ignored by stepstat: a forward pre-hook calls
cudaMemGetInfo (torch.cuda.mem_get_info: no GPU work, no sync) once per forward, so SQL can
cut the timeline into forwards (testdata/capture/verify_hf.sh). Nothing else is added.
"""
import argparse
import json
import os
import sys
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

# Shrunken configs: a few layers, small widths, a handful of experts; attributes a family lacks
# are skipped. MLA families need head_dim == qk_rope_head_dim and kv heads == heads.
SHRINK = {
    "qwen3_moe": dict(num_hidden_layers=4, hidden_size=1024, intermediate_size=2048,
                      moe_intermediate_size=512, num_experts=16, num_experts_per_tok=4,
                      num_attention_heads=16, num_key_value_heads=4, head_dim=64,
                      vocab_size=32000, decoder_sparse_step=1, mlp_only_layers=[],
                      max_position_embeddings=4096, tie_word_embeddings=False),
    "glm_moe_dsa": dict(num_hidden_layers=4, first_k_dense_replace=1, hidden_size=1024,
                        intermediate_size=2048, moe_intermediate_size=512, n_routed_experts=16,
                        n_shared_experts=1, num_experts_per_tok=4, n_group=4, topk_group=2,
                        num_attention_heads=16, num_key_value_heads=16, q_lora_rank=256,
                        kv_lora_rank=128, qk_rope_head_dim=32, qk_nope_head_dim=64,
                        head_dim=32, v_head_dim=64, index_n_heads=8, index_head_dim=64,
                        index_topk=64, vocab_size=32000, max_position_embeddings=4096,
                        tie_word_embeddings=False),
    "deepseek_v3": dict(num_hidden_layers=4, first_k_dense_replace=1, hidden_size=1024,
                        intermediate_size=2048, moe_intermediate_size=512, n_routed_experts=16,
                        n_shared_experts=1, num_experts_per_tok=4, n_group=4, topk_group=2,
                        num_attention_heads=16, num_key_value_heads=16, q_lora_rank=256,
                        kv_lora_rank=128, qk_rope_head_dim=32, qk_nope_head_dim=64,
                        head_dim=32, v_head_dim=64, vocab_size=32000,
                        max_position_embeddings=4096, tie_word_embeddings=False),
    "mixtral": dict(num_hidden_layers=4, hidden_size=1024, intermediate_size=1024,
                    num_local_experts=8, num_experts_per_tok=2, num_attention_heads=16,
                    num_key_value_heads=4, head_dim=64, vocab_size=32000,
                    max_position_embeddings=4096, tie_word_embeddings=False),
}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--family", default="qwen3_moe", choices=sorted(SHRINK))
    p.add_argument("--loop", default="generate", choices=["generate", "h2d", "2sync"])
    p.add_argument("--compile", action="store_true", help="static cache + reduce-overhead")
    p.add_argument("--new-tokens", type=int, default=16)
    p.add_argument("--prompt-len", type=int, default=128)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--save", help="save the random model here and exit")
    p.add_argument("--load", help="load the model from here (tp_plan=auto under torchrun)")
    p.add_argument("--probe", action="store_true", help="2 tokens, no profiler calls")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--experts-impl", help="transformers experts implementation (eager: a loop over experts)")
    p.add_argument("--no-marker", action="store_true", help="no cudaMemGetInfo per forward")
    return p.parse_args()


def build(a, dev):
    torch.manual_seed(a.seed)
    if a.load:
        kw = {}
        if int(os.environ.get("WORLD_SIZE", "1")) > 1:
            kw["tp_plan"] = "auto"
        m = AutoModelForCausalLM.from_pretrained(a.load, dtype=torch.bfloat16, **kw)
        if "tp_plan" not in kw:
            m = m.to(dev)
        return m.eval(), m.config
    cfg = AutoConfig.for_model(a.family)
    for k, v in SHRINK[a.family].items():
        if hasattr(cfg, k):
            setattr(cfg, k, v)
    kw = {}
    if a.experts_impl:
        kw["experts_implementation"] = a.experts_impl
    m = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16, **kw)
    return m.to(dev).eval(), m.config


def main():
    a = parse_args()
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    dev = torch.device("cuda", local)
    torch.cuda.set_device(dev)
    model, cfg = build(a, dev)
    if a.save:
        model.save_pretrained(a.save)
        print(json.dumps({"saved": a.save, "family": cfg.model_type}))
        return
    forwards = [0]

    def marker(_mod, _args, _kwargs):
        torch.cuda.mem_get_info()  # cudaMemGetInfo: the ground-truth forward boundary
        forwards[0] += 1
    if not a.no_marker:
        model.register_forward_pre_hook(marker, with_kwargs=True)

    n_new = 2 if a.probe else a.new_tokens
    g = torch.Generator().manual_seed(a.seed)
    prompt = torch.randint(0, cfg.vocab_size, (a.batch, a.prompt_len), generator=g).to(dev)

    def run_generate():
        kw = dict(max_new_tokens=n_new, min_new_tokens=n_new, do_sample=False,
                  eos_token_id=None, pad_token_id=0)
        if a.compile:
            kw["cache_implementation"] = "static"
            kw["compile_config"] = transformers.CompileConfig(fullgraph=False, mode="reduce-overhead")
        else:
            kw["disable_compile"] = True
        with torch.no_grad():
            out = model.generate(prompt, attention_mask=torch.ones_like(prompt), **kw)
        return out[:, a.prompt_len:].tolist()

    def run_loop():
        cache = transformers.DynamicCache(config=cfg)
        mask = torch.ones(a.batch, a.prompt_len, dtype=torch.long, device=dev)
        toks = []
        with torch.no_grad():
            out = model(input_ids=prompt, attention_mask=mask, past_key_values=cache, use_cache=True)
            tok = out.logits[:, -1].argmax(-1).cpu()  # D2H read-back
            toks.append(tok.tolist())
            for _ in range(n_new - 1):
                if a.loop == "h2d":
                    inp = tok.view(a.batch, 1).to(dev)  # H2D input copy (8 B per sequence)
                    mask = torch.cat([mask, mask.new_ones(a.batch, 1)], dim=1)
                else:
                    inp = tok.view(a.batch, 1).pin_memory().to(dev, non_blocking=True)
                    mask = torch.cat([mask, mask.new_ones(a.batch, 1)], dim=1)
                    n = int(mask.sum())  # host sync before the forward (length check)
                    assert n == mask.numel()
                out = model(input_ids=inp, attention_mask=mask, past_key_values=cache, use_cache=True)
                tok = out.logits[:, -1].argmax(-1).cpu()  # D2H read-back
                toks.append(tok.tolist())
        return toks

    run = run_generate if a.loop == "generate" else run_loop
    t0 = time.time()
    run()  # warm-up (and compile): not measured
    torch.cuda.synchronize()
    warm_s = time.time() - t0
    if world > 1:
        torch.distributed.barrier()
    forwards[0] = 0
    if not a.probe:
        torch.cuda.cudart().cudaProfilerStart()
    t0 = time.time()
    toks = run()
    torch.cuda.synchronize()
    meas_s = time.time() - t0
    if world > 1:
        torch.distributed.barrier()
    if not a.probe:
        torch.cuda.cudart().cudaProfilerStop()
    info = {
        "workload": "hf", "family": cfg.model_type, "loop": a.loop, "compile": a.compile,
        "rank": rank, "world": world, "new_tokens": n_new, "prompt_len": a.prompt_len,
        "batch": a.batch, "forwards": forwards[0], "decode_steps": forwards[0] - 1,
        "warmup_s": round(warm_s, 2), "measured_s": round(meas_s, 3),
        "layers": cfg.num_hidden_layers,
        "experts": getattr(cfg, "num_experts", None) or getattr(cfg, "n_routed_experts", None)
        or getattr(cfg, "num_local_experts", None),
        "topk": getattr(cfg, "num_experts_per_tok", None),
        "experts_impl": getattr(cfg, "_experts_implementation", None),
        "attn_impl": getattr(cfg, "_attn_implementation", None),
        "transformers": transformers.__version__, "torch": torch.__version__,
        "tokens": toks[:1],
    }
    print(json.dumps(info), flush=True)
    if world > 1:
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
