"""PyTorch CPU baseline for bench/trainer/lora.ts: a LoRA (r 8, alpha 16, all 7
projections) forward + backward of the same Qwen3-shaped decoder as
model/decoder-layer.ts + logprobs.ts, random float32 weights, frozen base.

The loss is minus the mean logprob of the scored tokens; lm_head and the log-softmax run
over the scored positions only ("scored": the last S tokens of each sequence) or, with
"scored": null, over every position (the trainer's path before issue 17).

usage: /usr/bin/python3 torch_lora.py '{"D":1024,"F":3072,"L":2,"H":16,"KV":8,"hd":128,"V":151936,"r":8,"B":2,"T":128,"scored":32,"reps":2}'
prints {"tokens_per_s": ..., "seconds": [...], "threads": ...} on stdout (tokens = B*T).
Debian: apt-get install python3-torch (generic BLAS, so a weak peer; see README).
"""
import json
import os
import math
import sys
import time

import torch


def rms(x, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def rope(x, cos, sin):  # x [B, T, n, hd]
    half = x.shape[-1] // 2
    return x * cos + torch.cat([x[..., half:], x[..., :half]], -1) * sin


def main():
    c = json.loads(sys.argv[1])
    D, F, L, H, KV, hd, V, r, B, T = (c[k] for k in ("D", "F", "L", "H", "KV", "hd", "V", "r", "B", "T"))
    S = c.get("scored")
    torch.set_num_threads(c.get("threads", os.cpu_count() or 1))
    torch.manual_seed(0)
    w = lambda *s: torch.randn(*s) * 0.02
    dims = {"q": (D, H * hd), "k": (D, KV * hd), "v": (D, KV * hd), "o": (H * hd, D), "gate": (D, F), "up": (D, F), "down": (F, D)}
    # W [out, in] frozen; A [r, in], B [out, r] trainable (PEFT layout)
    layers = [{m: (w(o, i), w(r, i).requires_grad_(), w(o, r).requires_grad_()) for m, (i, o) in dims.items()} for _ in range(L)]
    params = [t for lw in layers for (_, A, Bm) in lw.values() for t in (A, Bm)]
    embed = w(V, D)
    ids = torch.randint(0, V, (B, T))
    inv = 1_000_000.0 ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
    cos = torch.cat([ang.cos()] * 2, -1).float()[:, None, :]
    sin = torch.cat([-ang.sin(), ang.sin()], -1).float()[:, None, :]
    mask = torch.triu(torch.full((T, T), -1e9), 1)
    scale = 16.0 / r
    rep = H // KV

    def lin(x, p):
        W, A, Bm = p
        return x @ W.t() + scale * ((x @ A.t()) @ Bm.t())

    def step():
        x = embed[ids]  # [B, T, D]
        for lw in layers:
            n = rms(x)
            q = rope(rms(lin(n, lw["q"]).view(B, T, H, hd)), cos, sin).transpose(1, 2)
            k = rope(rms(lin(n, lw["k"]).view(B, T, KV, hd)), cos, sin).transpose(1, 2)
            v = lin(n, lw["v"]).view(B, T, KV, hd).transpose(1, 2)
            k = k.repeat_interleave(rep, 1)
            v = v.repeat_interleave(rep, 1)
            s = q @ k.transpose(-1, -2) / math.sqrt(hd) + mask
            a = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, H * hd)
            h = x + lin(a, lw["o"])
            m = rms(h)
            x = h + lin(torch.nn.functional.silu(lin(m, lw["gate"])) * lin(m, lw["up"]), lw["down"])
        hN = rms(x)[:, :-1]  # position t-1 predicts token t
        tgt = ids[:, 1:]
        if S is not None:
            hN, tgt = hN[:, -S:], tgt[:, -S:]
        logits = hN @ embed.t()  # tied head, frozen
        lp = logits.log_softmax(-1).gather(-1, tgt[..., None])
        loss = -lp.mean()
        for p in params:
            p.grad = None
        loss.backward()

    step()  # warm-up
    secs = []
    for _ in range(c.get("reps", 2)):
        t0 = time.perf_counter()
        step()
        secs.append(time.perf_counter() - t0)
    secs.sort()
    print(json.dumps({"tokens_per_s": B * T / secs[len(secs) // 2], "seconds": secs, "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()
