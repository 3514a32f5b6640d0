#!/usr/bin/env python3
"""Independent NumPy reference for gsteer's tfjs Qwen3 + LoRA (tests/trainer/model).

Written from the Hugging Face transformers Qwen3 description (docs/method.md, method §9.1) and the
PEFT LoRA definition, not from the TypeScript code. Everything is computed in float64 from
the exact stored weights (bf16 weights are decoded from their bits), so the TypeScript
float32 forward must match within 1e-4.

    python3 tests/reference/qwen3_ref.py            # rewrite tests/reference/fixtures/

Fixtures (kept small, committed, so CI needs no Python):
  tiny/     shaped like `gsteer model init --preset tiny` (hidden 64, 2 layers, 4 heads /
            2 kv heads, head_dim 16, ffn 192, tied embeddings), BF16 weights, with a
            vocab_map.json (trimmed output vocabulary; one input id outside the map).
  gqa/      2 layers, hidden 32, 4 heads / 2 kv heads, head_dim 12 (!= 32/4), ffn 48,
            untied lm_head, full vocabulary of 97 ids, F32, sharded in two files with a
            model.safetensors.index.json.
  */adapter/  PEFT-layout LoRA (adapter_config.json + adapter_model.safetensors) with
            non-zero lora_B so it changes the logprobs.
  */expected.json  inputs and per-token logprobs / entropies, with and without adapter.
"""
import json
import os
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures")
PROJ = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
PARENT = {m: ("mlp" if m in ("gate_proj", "up_proj", "down_proj") else "self_attn") for m in PROJ}


# ---------------------------------------------------------------- safetensors (own writer)
def to_bf16_bits(x):
    """float32 -> bfloat16 bits, round to nearest even."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16_bits(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def write_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, dtype, shape, raw bytes); header padded with spaces to 8."""
    header, offset = {}, 0
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for _, _, _, raw in tensors:
            f.write(raw)


def encode(name, arr, dtype):
    """Returns the stored tensor entry and the exact float64 values it decodes to."""
    arr = np.asarray(arr, dtype=np.float32)
    if dtype == "BF16":
        bits = to_bf16_bits(arr)
        return (name, dtype, arr.shape, bits.astype("<u2").tobytes()), from_bf16_bits(bits).astype(np.float64)
    if dtype == "F32":
        return (name, dtype, arr.shape, arr.astype("<f4").tobytes()), arr.astype(np.float64)
    raise ValueError(dtype)


# ---------------------------------------------------------------- the model
def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def rope(x, theta):
    """x: [T, heads, hd]; positions 0..T-1 (HF default rotary embedding)."""
    T, _, hd = x.shape
    inv_freq = 1.0 / (theta ** (np.arange(0, hd, 2, dtype=np.float64) / hd))
    freqs = np.arange(T, dtype=np.float64)[:, None] * inv_freq[None, :]
    emb = np.concatenate([freqs, freqs], axis=-1)[:, None, :]
    return x * np.cos(emb) + rotate_half(x) * np.sin(emb)


def proj(x, W, lora, layer, m):
    """HF nn.Linear (no bias) + PEFT LoRA: x W^T + (alpha/r) x A^T B^T."""
    y = x @ W.T
    if lora is not None and (layer, m) in lora["pairs"]:
        A, B = lora["pairs"][(layer, m)]
        y = y + (x @ A.T @ B.T) * lora["scaling"]
    return y


def forward_logits(cfg, w, rows, lora):
    """rows: [T] embedding rows of one sequence -> logits [T, n_rows]."""
    H, KV, hd, eps = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"], cfg["rms_norm_eps"]
    T = len(rows)
    x = w["model.embed_tokens.weight"][rows]
    causal = np.triu(np.ones((T, T), dtype=bool), k=1)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        W = lambda m: w[p + f"{PARENT[m]}.{m}.weight"]
        n = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = proj(n, W("q_proj"), lora, i, "q_proj").reshape(T, H, hd)
        k = proj(n, W("k_proj"), lora, i, "k_proj").reshape(T, KV, hd)
        v = proj(n, W("v_proj"), lora, i, "v_proj").reshape(T, KV, hd)
        q = rope(rms_norm(q, w[p + "self_attn.q_norm.weight"], eps), cfg["rope_theta"])
        k = rope(rms_norm(k, w[p + "self_attn.k_norm.weight"], eps), cfg["rope_theta"])
        out = np.zeros((T, H, hd))
        for h in range(H):
            kv = h // (H // KV)  # repeat_kv
            s = q[:, h, :] @ k[:, kv, :].T / np.sqrt(hd)
            s[causal] = -np.inf
            s = np.exp(s - s.max(axis=-1, keepdims=True))
            s /= s.sum(axis=-1, keepdims=True)
            out[:, h, :] = s @ v[:, kv, :]
        x = x + proj(out.reshape(T, H * hd), W("o_proj"), lora, i, "o_proj")
        m = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        g = proj(m, W("gate_proj"), lora, i, "gate_proj")
        u = proj(m, W("up_proj"), lora, i, "up_proj")
        x = x + proj(g / (1 + np.exp(-g)) * u, W("down_proj"), lora, i, "down_proj")
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else w["lm_head.weight"]
    return x @ head.T


def logprobs_and_entropy(cfg, w, ids, lora, kept, unk):
    if kept is None:
        rows = np.array(ids)
    else:
        row_of = {t: r for r, t in enumerate(kept)}
        rows = np.array([row_of.get(t, row_of[unk]) for t in ids])
    logits = forward_logits(cfg, w, rows, lora)
    mx = logits.max(axis=-1, keepdims=True)
    logz = mx[:, 0] + np.log(np.exp(logits - mx).sum(axis=-1))
    logp = logits - logz[:, None]
    lp = [0.0] + [float(logp[t - 1, rows[t]]) for t in range(1, len(ids))]
    ent = [0.0] + [float(-(np.exp(logp[t - 1]) * logp[t - 1]).sum()) for t in range(1, len(ids))]
    return lp, ent


# ---------------------------------------------------------------- fixture builders
def proj_shape(cfg, m):
    D, F, H, KV, hd = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    return {"q_proj": (H * hd, D), "k_proj": (KV * hd, D), "v_proj": (KV * hd, D), "o_proj": (D, H * hd),
            "gate_proj": (F, D), "up_proj": (F, D), "down_proj": (D, F)}[m]


def random_model(rng, cfg, rows, dtype):
    D = cfg["hidden_size"]
    entries, w = [], {}

    def add(name, arr):
        e, val = encode(name, arr, dtype)
        entries.append(e)
        w[name] = val

    add("model.embed_tokens.weight", rng.normal(0, 0.5, (rows, D)))
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        add(p + "input_layernorm.weight", 1 + rng.normal(0, 0.1, D))
        for m in PROJ:
            add(p + f"{PARENT[m]}.{m}.weight", rng.normal(0, 0.15, proj_shape(cfg, m)))
        add(p + "self_attn.q_norm.weight", 1 + rng.normal(0, 0.1, cfg["head_dim"]))
        add(p + "self_attn.k_norm.weight", 1 + rng.normal(0, 0.1, cfg["head_dim"]))
        add(p + "post_attention_layernorm.weight", 1 + rng.normal(0, 0.1, D))
    add("model.norm.weight", 1 + rng.normal(0, 0.1, D))
    if not cfg["tie_word_embeddings"]:
        add("lm_head.weight", rng.normal(0, 0.5, (rows, D)))
    return entries, w


def random_adapter(rng, cfg, r, alpha, targets, folder, base):
    os.makedirs(folder, exist_ok=True)
    entries, pairs = [], {}
    for i in range(cfg["num_hidden_layers"]):
        for m in targets:
            out_f, in_f = proj_shape(cfg, m)
            pre = f"base_model.model.model.layers.{i}.{PARENT[m]}.{m}"
            ea, A = encode(pre + ".lora_A.weight", rng.uniform(-1, 1, (r, in_f)) / np.sqrt(in_f), "F32")
            eb, B = encode(pre + ".lora_B.weight", rng.normal(0, 0.2, (out_f, r)), "F32")
            entries += [ea, eb]
            pairs[(i, m)] = (A, B)
    write_safetensors(os.path.join(folder, "adapter_model.safetensors"), entries, {"format": "pt"})
    config = {  # the fields PEFT 0.13 writes for a LoRA adapter
        "alpha_pattern": {}, "auto_mapping": None, "base_model_name_or_path": base, "bias": "none",
        "fan_in_fan_out": False, "inference_mode": True, "init_lora_weights": True, "layer_replication": None,
        "layers_pattern": None, "layers_to_transform": None, "loftq_config": {}, "lora_alpha": alpha,
        "lora_dropout": 0.05, "megatron_config": None, "megatron_core": "megatron.core", "modules_to_save": None,
        "peft_type": "LORA", "r": r, "rank_pattern": {}, "revision": None, "target_modules": list(reversed(targets)),
        "task_type": "CAUSAL_LM", "use_dora": False, "use_rslora": False,
    }
    with open(os.path.join(folder, "adapter_config.json"), "w") as f:
        json.dump(config, f, indent=2)
    return {"pairs": pairs, "scaling": alpha / r}


def hf_config(cfg):
    return {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_act": "silu",
            "attention_bias": False, "torch_dtype": "float32", **cfg}


def build(name, cfg, dtype, kept, unk, inputs, adapter_spec, shards, seed):
    rng = np.random.default_rng(seed)
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    rows = len(kept) if kept is not None else cfg["vocab_size"]
    entries, w = random_model(rng, cfg, rows, dtype)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(hf_config(cfg), f, indent=2)
    if kept is not None:
        with open(os.path.join(folder, "vocab_map.json"), "w") as f:
            json.dump({"format": "gsteer-vocab-map/1", "unk_id": unk, "kept_ids": kept}, f)
    if shards == 1:
        write_safetensors(os.path.join(folder, "model.safetensors"), entries, {"format": "pt"})
    else:
        half = len(entries) // 2
        parts = [entries[:half], entries[half:]]
        weight_map = {}
        for k, part in enumerate(parts):
            fn = f"model-{k + 1:05d}-of-{len(parts):05d}.safetensors"
            write_safetensors(os.path.join(folder, fn), part, {"format": "pt"})
            weight_map.update({e[0]: fn for e in part})
        total = sum(len(e[3]) for e in entries)
        with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    r, alpha, targets = adapter_spec
    lora = random_adapter(rng, cfg, r, alpha, targets, os.path.join(folder, "adapter"), f"gsteer-fixture/{name}")
    expected = {"inputs": inputs, "base": {"logprobs": [], "entropy": []}, "adapter": {"logprobs": [], "entropy": []}}
    for ids in inputs:
        for key, lo in (("base", None), ("adapter", lora)):
            lp, ent = logprobs_and_entropy(cfg, w, ids, lo, kept, unk)
            expected[key]["logprobs"].append(lp)
            expected[key]["entropy"].append(ent)
    with open(os.path.join(folder, "expected.json"), "w") as f:
        json.dump(expected, f)


def main():
    # tiny: the preset's shape; kept = byte tokens 0..255 + a few words + specials.
    kept = sorted(set(range(256)) | {1879, 3412, 9707, 11, 872, 198} | set(range(151643, 151669)))
    tiny = {"vocab_size": 151936, "hidden_size": 64, "intermediate_size": 192, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "rms_norm_eps": 1e-6,
            "rope_theta": 1000000.0, "tie_word_embeddings": True, "max_position_embeddings": 40960}
    tiny_inputs = [
        [151644, 872, 198, 9707, 1879, 11, 3412, 151645, 198, 151644, 77091, 198],  # 77091 is outside the map -> unk
        [9707, 1879, 11, 3412, 220, 151645],
        [151643, 40],
    ]
    build("tiny", tiny, "BF16", kept, 151643, tiny_inputs, (4, 8, ["q_proj", "v_proj"]), 1, seed=1)

    gqa = {"vocab_size": 97, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 12, "rms_norm_eps": 1e-5,
           "rope_theta": 10000.0, "tie_word_embeddings": False, "max_position_embeddings": 512}
    rng = np.random.default_rng(7)
    gqa_inputs = [rng.integers(0, 97, n).tolist() for n in (17, 9, 1, 24)]
    build("gqa", gqa, "F32", None, None, gqa_inputs, (4, 8, PROJ), 2, seed=2)


if __name__ == "__main__":
    main()
