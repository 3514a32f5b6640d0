"""Baseline for bench/trainer/lora.ts: a numpy (float32) Qwen3 forward with LoRA on every
projection, scoring per-token logprobs of one sequence, the same math as
trainer/model/decoder-layer.ts + logprobs.ts. Forward only: there is no torch on this
machine and numpy has no autodiff, so the baseline for forward+backward is this forward.

usage: python3 numpy_forward.py '{"D":64,"F":192,"L":2,"H":4,"KV":2,"hd":16,"V":151936,"r":8,"T":128,"reps":3}'
prints {"tokens_per_s": ..., "seconds": [...]} on stdout.
"""
import json
import sys
import time

import numpy as np


def rms(x, w, eps=1e-6):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, cos, sin):  # x [T, n, hd]
    half = x.shape[-1] // 2
    return x * cos + np.concatenate([x[..., half:], x[..., :half]], -1) * sin


def main():
    c = json.loads(sys.argv[1])
    D, F, L, H, KV, hd, V, r, T = (c[k] for k in ("D", "F", "L", "H", "KV", "hd", "V", "r", "T"))
    rng = np.random.default_rng(0)
    w = lambda *s: (rng.standard_normal(s, dtype=np.float32) * 0.02)
    dims = {"q": (D, H * hd), "k": (D, KV * hd), "v": (D, KV * hd), "o": (H * hd, D), "gate": (D, F), "up": (D, F), "down": (F, D)}
    layers = [{m: (w(o, i), w(r, i), w(o, r)) for m, (i, o) in dims.items()} for _ in range(L)]
    embed = w(V, D)
    ids = rng.integers(0, V, T)
    inv = 1_000_000.0 ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)
    ang = np.arange(T)[:, None] * inv[None, :]
    cos = np.concatenate([np.cos(ang)] * 2, -1).astype(np.float32)[:, None, :]
    sin = np.concatenate([-np.sin(ang), np.sin(ang)], -1).astype(np.float32)[:, None, :]
    mask = np.triu(np.full((T, T), -1e9, np.float32), 1)
    scale = 16.0 / r

    def lin(x, p):
        W, A, B = p
        return x @ W.T + scale * ((x @ A.T) @ B.T)

    def forward():
        x = embed[ids]
        for lw in layers:
            n = rms(x, 1.0)
            q = rope(rms(lin(n, lw["q"]).reshape(T, H, hd), 1.0), cos, sin)
            k = rope(rms(lin(n, lw["k"]).reshape(T, KV, hd), 1.0), cos, sin)
            v = lin(n, lw["v"]).reshape(T, KV, hd)
            rep = H // KV
            k = np.repeat(k, rep, axis=1).transpose(1, 0, 2)
            v = np.repeat(v, rep, axis=1).transpose(1, 0, 2)
            s = q.transpose(1, 0, 2) @ k.transpose(0, 2, 1) / np.sqrt(hd) + mask
            s = np.exp(s - s.max(-1, keepdims=True))
            p = s / s.sum(-1, keepdims=True)
            a = (p @ v).transpose(1, 0, 2).reshape(T, H * hd)
            h = x + lin(a, lw["o"])
            m = rms(h, 1.0)
            g = lin(m, lw["gate"])
            x = h + lin(g / (1 + np.exp(-g)) * lin(m, lw["up"]), lw["down"])
        hN = rms(x, 1.0)[:-1]
        logits = hN @ embed.T  # [T-1, V], tied head
        mx = logits.max(-1, keepdims=True)
        lse = (mx + np.log(np.exp(logits - mx).sum(-1, keepdims=True)))[:, 0]
        return logits[np.arange(T - 1), ids[1:]] - lse

    forward()  # warm-up
    secs = []
    for _ in range(c.get("reps", 3)):
        t0 = time.perf_counter()
        forward()
        secs.append(time.perf_counter() - t0)
    print(json.dumps({"tokens_per_s": T / float(np.median(secs)), "seconds": secs}))


if __name__ == "__main__":
    main()
