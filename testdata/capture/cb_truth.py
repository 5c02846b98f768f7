#!/usr/bin/env python3
"""Complete the ground truth of serve-cb (transformers continuous batching) from what it recorded.

serve_workload.py --case cb records, per scheduler iteration (one forward), the flattened query
tokens (input shape [1, T]) and how many requests the scheduler put in the batch; with
transformers 5.17 the scheduled entries carried no status, so each forward's phase is not known
from the run alone. This replays the FIFO scheduler with the run's own settings (token budget
max_batch_tokens, requests in arrival order, each request's prompt and output length and the
forward before which it was added), checks that the replay gives exactly the recorded T and the
recorded request count for EVERY iteration, and only then writes per forward: the requests in the
batch, each with its query tokens and kind (prefill chunk / decode), and the phase: prefill (only
prompt tokens), decode (only one token per request), mixed (prompt chunk(s) and decodes together).

  python3 testdata/capture/cb_truth.py testdata/traces/serve-cb.truth.json   (rewrites it in place)
"""
import json
import sys


def replay(truth):
    budget = truth["cb_config"]["max_batch_tokens"]
    maxreq = truth["cb_config"].get("max_requests_per_batch") or 1 << 30
    reqs = [dict(r, left=r["prompt_len"], gen=0, done=False) for r in truth["requests"]]
    out = []
    for it, f in enumerate(truth["forwards"]):
        live = [r for r in reqs if r["added_after_forwards"] <= it and not r["done"]]
        batch, room = [], budget
        for r in live:  # decoding requests: one token each
            if r["left"] == 0 and len(batch) < maxreq and room > 0:
                batch.append((r, 1, "decode"))
                room -= 1
        for r in live:  # then prompt chunks, first come first served, within the token budget
            if r["left"] > 0 and len(batch) < maxreq and room > 0:
                n = min(r["left"], room)
                batch.append((r, n, "prefill"))
                room -= n
        for r, n, kind in batch:
            if kind == "prefill":
                r["left"] -= n
                if r["left"] == 0:
                    r["gen"] = 1  # the last prompt chunk samples the first token
            else:
                r["gen"] += 1
            if r["left"] == 0 and r["gen"] >= r["max_new_tokens"]:
                r["done"] = True
        out.append(batch)
    return out, reqs


def main(path):
    truth = json.load(open(path))
    batches, reqs = replay(truth)
    bad = []
    for f, b in zip(truth["forwards"], batches):
        t = sum(n for _, n, _ in b)
        if t != f["tokens"] or len(b) != len(f.get("scheduled") or []):
            bad.append((f["i"], f["tokens"], len(f.get("scheduled") or []), t, len(b)))
    for r in reqs:
        if not r["done"] or r["gen"] != r["output_len"]:
            bad.append(("request", r["request"], r["gen"], r["output_len"]))
    if bad:
        sys.exit("%s: the replay disagrees with the recorded run: %s" % (path, bad[:5]))
    for f, b in zip(truth["forwards"], batches):
        kinds = {k for _, _, k in b}
        f["phase"] = "mixed" if len(kinds) == 2 else kinds.pop()
        f["n_requests"] = len(b)
        f["batch_requests"] = [dict(request=r["request"], tokens=n, kind=k) for r, n, k in b]
        f.pop("scheduled", None)
    c = truth["counts"]
    for k in ("prefill", "decode", "mixed"):
        c[k] = sum(1 for f in truth["forwards"] if f["phase"] == k)
    truth["phase_source"] = ("replay of the FIFO scheduler (testdata/capture/cb_truth.py), equal to the recorded "
                             "query tokens and request count of every iteration")
    with open(path, "w") as fh:
        fh.write(json.dumps(truth, indent=1) + "\n")
    print(path, c, [f["phase"][0] + str(f["n_requests"]) for f in truth["forwards"]])


if __name__ == "__main__":
    for p in sys.argv[1:]:
        main(p)
