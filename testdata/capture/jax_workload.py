#!/usr/bin/env python3
"""A small decoder in jax.numpy, for Nsight Systems captures of an XLA serving loop.

  --loop step   one jitted decode step per token; the host reads the sampled tokens back
                (jax.device_get) after each step, as a server does
  --loop fori   the same N decode steps on the device in one lax.fori_loop; one read-back at the end

Both start with a jitted prefill of the prompt (its tokens read back). Model: L layers of
[RMSNorm -> QKV matmul -> KV-cache write (dynamic_update_slice) -> attention over the whole
preallocated cache with a position mask -> O matmul -> residual -> RMSNorm -> SiLU-gated MLP ->
residual], final RMSNorm, lm_head, argmax. Random bf16 weights. Only the measured region (prefill +
decode) lies between cuProfilerStart/Stop (driver API; nsys --capture-range=cudaProfilerApi);
compilation and a warm-up run happen before it. Writes a ground-truth sidecar (--truth).
"""
import argparse
import ctypes
import json
import os
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import jax
import jax.numpy as jnp
from jax import lax


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--loop", choices=["step", "fori"], default="step")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--ffn", type=int, default=2816)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--prompt-len", type=int, default=128)
    p.add_argument("--steps", type=int, default=24)
    p.add_argument("--max-seq", type=int, default=256)
    p.add_argument("--truth")
    p.add_argument("--name", default="")
    p.add_argument("--probe", action="store_true")
    a = p.parse_args()
    if a.probe:
        a.steps = 2
    L, H, NH, F, V, B, P, S = a.layers, a.hidden, a.heads, a.ffn, a.vocab, a.batch, a.prompt_len, a.max_seq
    HD = H // NH
    bf = jnp.bfloat16
    key = jax.random.PRNGKey(1234)
    ks = jax.random.split(key, 8)

    def rnd(k, *shape):
        return (jax.random.normal(k, shape, jnp.float32) * 0.02).astype(bf)
    params = dict(emb=rnd(ks[0], V, H), wqkv=rnd(ks[1], L, H, 3 * H), wo=rnd(ks[2], L, H, H),
                  wgu=rnd(ks[3], L, H, 2 * F), wd=rnd(ks[4], L, F, H), wlm=rnd(ks[5], H, V),
                  ln=jnp.ones((L, 2, H), bf), lnf=jnp.ones((H,), bf))
    prompt = jax.random.randint(ks[6], (B, P), 0, V)

    def rms(x, w):
        x32 = x.astype(jnp.float32)
        return (x32 * lax.rsqrt(jnp.mean(x32 * x32, -1, keepdims=True) + 1e-6)).astype(bf) * w

    def forward(params, kc, vc, toks, pos):
        """toks [B, T] at positions pos..pos+T-1; kc/vc [L, B, S, NH, HD]."""
        T = toks.shape[1]
        x = params["emb"][toks]                                        # [B, T, H]
        qpos = pos + jnp.arange(T)
        mask = jnp.arange(S)[None, :] <= qpos[:, None]                 # [T, S]
        for l in range(L):
            h = rms(x, params["ln"][l, 0])
            q, k, v = jnp.split(h @ params["wqkv"][l], 3, axis=-1)
            q, k, v = (t.reshape(B, T, NH, HD) for t in (q, k, v))
            kc = lax.dynamic_update_slice(kc, k[None], (l, 0, pos, 0, 0))
            vc = lax.dynamic_update_slice(vc, v[None], (l, 0, pos, 0, 0))
            s = jnp.einsum("bthd,bshd->bhts", q, kc[l]).astype(jnp.float32) / (HD ** 0.5)
            s = jnp.where(mask[None, None], s, -1e30)
            o = jnp.einsum("bhts,bshd->bthd", jax.nn.softmax(s, -1).astype(bf), vc[l])
            x = x + o.reshape(B, T, H) @ params["wo"][l]
            h = rms(x, params["ln"][l, 1])
            g, u = jnp.split(h @ params["wgu"][l], 2, axis=-1)
            x = x + (jax.nn.silu(g) * u) @ params["wd"][l]
        logits = rms(x[:, -1], params["lnf"]) @ params["wlm"]
        return jnp.argmax(logits, -1).astype(jnp.int32), kc, vc

    @jax.jit
    def prefill(params, kc, vc, prompt):
        tok, kc, vc = forward(params, kc, vc, prompt, 0)
        return tok, kc, vc, jnp.int32(P)

    @jax.jit
    def step(params, kc, vc, tok, pos):
        tok, kc, vc = forward(params, kc, vc, tok[:, None], pos)
        return tok, kc, vc, pos + 1

    @jax.jit
    def decode_n(params, kc, vc, tok, pos):
        def body(i, c):
            kc, vc, tok, pos, out = c
            tok, kc, vc = forward(params, kc, vc, tok[:, None], pos)
            return kc, vc, tok, pos + 1, out.at[i].set(tok)
        out = jnp.zeros((a.steps, B), jnp.int32)
        kc, vc, tok, pos, out = lax.fori_loop(0, a.steps, body, (kc, vc, tok, pos, out))
        return out, kc, vc

    def fresh():
        z = jnp.zeros((L, B, S, NH, HD), bf)
        return z, z + 0

    def run():
        toks = []
        kc, vc = fresh()
        jax.block_until_ready((kc, vc))
        t0 = time.monotonic_ns()
        tok, kc, vc, pos = prefill(params, kc, vc, prompt)
        toks.append(jax.device_get(tok).tolist())                     # read-back (D2H)
        if a.loop == "step":
            for _ in range(a.steps):
                tok, kc, vc, pos = step(params, kc, vc, tok, pos)
                toks.append(jax.device_get(tok).tolist())             # read-back each step
        else:
            out, kc, vc = decode_n(params, kc, vc, tok, pos)
            toks.extend(jax.device_get(out).tolist())                 # one read-back at the end
        return toks, t0

    run()  # compile + warm-up
    # cuProfilerStart acts on the calling thread's current context: make XLA's (the device's
    # primary context) current here first.
    cuda = ctypes.CDLL("libcuda.so.1")
    cdev, ctx = ctypes.c_int(), ctypes.c_void_p()
    rcs = [cuda.cuDeviceGet(ctypes.byref(cdev), 0), cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), cdev),
           cuda.cuCtxSetCurrent(ctx)]
    if not a.probe:
        rcs.append(cuda.cuProfilerStart())
    toks, t0 = run()
    if not a.probe:
        rcs.append(cuda.cuProfilerStop())
    print("cuda driver rcs", rcs, flush=True)
    fw = [dict(i=0, model="target", batch=B, tokens=P, phase="prefill", iteration=0, jit="prefill")]
    for i in range(a.steps):
        fw.append(dict(i=i + 1, model="target", batch=B, tokens=1, phase="decode", iteration=i + 1,
                       jit="step" if a.loop == "step" else "decode_n (fori_loop iteration %d)" % i))
    info = dict(name=a.name, case="jax-" + a.loop, loop=a.loop, layers=L, hidden=H, heads=NH, ffn=F, vocab=V,
                batch=B, prompt_len=P, max_seq=S, decode_steps=a.steps, jax=jax.__version__,
                devices=[str(d) for d in jax.devices()], marker=False,
                host_readbacks=(1 + a.steps) if a.loop == "step" else 2,
                jit_calls=(1 + a.steps) if a.loop == "step" else 2,
                note=("step: the host calls the jitted step once per token and reads the tokens back "
                      "(jax.device_get) each time; fori: the decode steps run on the device in one "
                      "lax.fori_loop (one jit call), one read-back at the end"),
                sampled_tok0=[t[0] for t in toks], forwards=fw,
                counts=dict(forwards=len(fw), target_forwards=len(fw), draft_forwards=0, prefill=1,
                            decode=a.steps, mixed=0, rounds=None, requests=1))
    info["requests"] = [dict(request=0, batch=B, prompt_len=P, output_len=a.steps + 1)]
    if a.truth:
        with open(a.truth, "w") as f:
            f.write(json.dumps(info, indent=1) + "\n")
    print(json.dumps({"workload": "jax", "name": a.name, "loop": a.loop, "steps": a.steps,
                      "jax": jax.__version__, "tok0": info["sampled_tok0"][:6]}), flush=True)


if __name__ == "__main__":
    main()
