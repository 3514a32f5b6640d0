"""Conformance of a Tinker-API server with the OFFICIAL Tinker Python SDK 0.25.0 (issue 31).

Drives the server at --base-url through the SDK's public clients only (ServiceClient,
TrainingClient, SamplingClient, RestClient), as a Tinker user would:

  1. capabilities list --base-model; a LoRA training client is created; get_info agrees
  2. forward_backward with each loss in --losses returns per-token logprobs and elementwise
     losses of the right length, loss:sum = their sum, and at ratio 1 (sampling logprobs from
     a forward of the same weights) the values the Tinker docs give: importance_sampling and
     ppo -sum(A), cispo and dro -sum(logp * A)
  3. optim_step; on a fixed batch the cross_entropy loss falls over --steps steps
  4. save_weights_for_sampler, then a SamplingClient on that path samples tokens whose
     logprobs equal the trainer's forward logprobs of the same tokens (within --logprob-tol)
     and are far from the base model's (the sampler serves the trained adapter, not a stale one);
     save_weights_and_get_sampling_client (ephemeral weights) samples the same
  5. save_state, then load_state_with_optimizer on a fresh training client (weights_info +
     create_model + load), then one more step equals the uninterrupted run's step (within
     --resume-tol); load_state without the optimizer gives a different step (Adam's moments
     matter), so the check can fail

Prints one line per check and exits 0 only when every check passed. Needs the SDK importable:
PYTHONPATH=<tinker-sdk-0.25.0/src> (tests/helpers/tinker-sdk.ts finds it) and Debian's httpx,
protobuf, zstandard (shared/peers/README.md; .ci/run installs them).
"""
import argparse
import math
import os
import sys
import time

sys.path.append("/usr/lib/python3/dist-packages")  # Debian's packages go last (peers/README.md)

import tinker  # noqa: E402
from tinker import types  # noqa: E402

failures: list[str] = []


def check(name: str, ok: bool, detail: str) -> None:
    print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)
    if not ok:
        failures.append(name)


def datum(tokens: list[int], targets: list[int], **inputs: list[float]) -> types.Datum:
    fields = {"target_tokens": types.TensorData(data=targets, dtype="int64", shape=[len(targets)])}
    for k, v in inputs.items():
        fields[k] = types.TensorData(data=v, dtype="float32", shape=[len(v)])
    return types.Datum(model_input=types.ModelInput.from_ints(tokens), loss_fn_inputs=fields)


def logprobs_of(out: types.ForwardBackwardOutput) -> list[list[float]]:
    return [o["logprobs"].tolist() for o in out.loss_fn_outputs]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--base-model", required=True)
    ap.add_argument("--prompt", required=True, help="comma-separated prompt token ids")
    ap.add_argument("--losses", default="cross_entropy,importance_sampling,ppo,cispo,dro")
    ap.add_argument("--rank", type=int, default=4)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--sample-tokens", type=int, default=12)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--lr", type=float, default=1e-2)
    ap.add_argument("--logprob-tol", type=float, default=2e-4, help="float32 rounding of two computation orders: the sampler decodes with a KV cache, forward scores the whole sequence")
    ap.add_argument("--resume-tol", type=float, default=1e-6)
    a = ap.parse_args()
    started = time.time()
    prompt = [int(x) for x in a.prompt.split(",")]
    adam = types.AdamParams(learning_rate=a.lr)

    service = tinker.ServiceClient(base_url=a.base_url)
    print(f"SDK {tinker.__version__} against {a.base_url} (base model {a.base_model})", flush=True)
    caps = service.get_server_capabilities()
    names = [m.model_name for m in caps.supported_models]
    check("capabilities", a.base_model in names, f"supported_models = {names}")

    tc = service.create_lora_training_client(base_model=a.base_model, rank=a.rank, seed=a.seed)
    info = tc.get_info()
    check("create_lora_training_client + get_info", info.model_id == tc.model_id and info.lora_rank == a.rank, f"model_id {info.model_id}, lora_rank {info.lora_rank}, tokenizer_id {info.model_data.tokenizer_id}")

    # Training data the model can score: tokens the base model samples after the prompt.
    base = service.create_sampling_client(base_model=a.base_model)
    s0 = base.sample(types.ModelInput.from_ints(prompt), 1, types.SamplingParams(max_tokens=a.sample_tokens, temperature=1.0, seed=11)).result()
    completion = s0.sequences[0].tokens
    check("base-model sampling", len(completion) > 0, f"{len(completion)} tokens, stop_reason {s0.sequences[0].stop_reason}")
    seq = prompt + completion
    tokens, targets = seq[:-1], seq[1:]
    n = len(tokens)
    weights = [0.0] * (len(prompt) - 1) + [1.0] * (n - len(prompt) + 1)

    fwd = tc.forward([datum(tokens, targets, weights=weights)], "cross_entropy").result()
    lp0 = logprobs_of(fwd)[0]
    check("forward (cross_entropy)", len(lp0) == n and all(math.isfinite(x) and x <= 0 for x in lp0), f"{n} logprobs, loss:sum {fwd.metrics.get('loss:sum'):.6f}")

    adv = [0.0] * (len(prompt) - 1) + [0.5 if i % 2 == 0 else -0.25 for i in range(n - len(prompt) + 1)]
    for loss in a.losses.split(","):
        if loss == "cross_entropy":
            d = datum(tokens, targets, weights=weights)
            want = -sum(w * lp for w, lp in zip(weights, lp0))
        else:  # policy-gradient losses at ratio 1 (sampling logprobs = the current weights'): loss_t = -A_t
            now = logprobs_of(tc.forward([datum(tokens, targets, weights=weights)], "cross_entropy").result())[0]
            d = datum(tokens, targets, logprobs=now, advantages=adv)
            # importance_sampling, ppo: -r A = -A; cispo: -sg(clip(r)) p A = -p A; dro: -(p A - beta/2 (p - q)^2) = -p A
            want = -sum(adv) if loss in ("importance_sampling", "ppo") else -sum(p * x for p, x in zip(now, adv))
        cfg = {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2} if loss in ("ppo", "cispo") else {"beta": 0.1} if loss == "dro" else None
        out = tc.forward_backward([d], loss, cfg).result()
        el = out.loss_fn_outputs[0]["elementwise_loss"].tolist()
        got = out.metrics["loss:sum"]
        ok = len(el) == n and abs(got - want) <= 1e-4 * max(1.0, abs(want)) and abs(sum(el) - got) <= 1e-4 * max(1.0, abs(got))
        check(f"forward_backward {loss}", ok, f"loss:sum {got:.6f}, expected {want:.6f}, sum(elementwise_loss) {sum(el):.6f}")
        m = tc.optim_step(adam).result()
        check(f"optim_step after {loss}", m.metrics is not None, f"metrics {m.metrics}")

    batch = [datum(tokens, targets, weights=weights)]
    losses = []
    for _ in range(a.steps):
        r = tc.forward_backward(batch, "cross_entropy").result()
        tc.optim_step(adam).result()
        losses.append(r.metrics["loss:sum"])
    check("loss falls on a fixed batch", losses[-1] < losses[0], "cross_entropy loss:sum by step " + ", ".join(f"{x:.4f}" for x in losses))

    saved = tc.save_weights_for_sampler("conformance-sampler").result()
    sc = service.create_sampling_client(model_path=saved.path)
    s1 = sc.sample(types.ModelInput.from_ints(prompt), 1, types.SamplingParams(max_tokens=a.sample_tokens, temperature=1.0, seed=5)).result()
    st, slp = s1.sequences[0].tokens, s1.sequences[0].logprobs
    seq1 = prompt + st
    f1 = logprobs_of(tc.forward([datum(seq1[:-1], seq1[1:], weights=[1.0] * (len(seq1) - 1))], "cross_entropy").result())[0]
    trainer_lp = f1[len(prompt) - 1 :]
    diff = max(abs(x - y) for x, y in zip(slp or [], trainer_lp)) if slp else float("inf")
    check("sampler logprobs equal forward's", slp is not None and len(slp) == len(st) and diff <= a.logprob_tol, f"{saved.path}: {len(st)} sampled tokens, max |sampler - forward| = {diff:.3g} (tol {a.logprob_tol:g})")
    eph = tc.save_weights_and_get_sampling_client()  # ephemeral weights behind a new sampling session
    s2 = eph.sample(types.ModelInput.from_ints(prompt), 1, types.SamplingParams(max_tokens=a.sample_tokens, temperature=1.0, seed=5)).result()
    check("save_weights_and_get_sampling_client samples the same weights", s2.sequences[0].tokens == st and s2.sequences[0].logprobs == slp, f"{len(s2.sequences[0].tokens)} tokens, same ids and logprobs as {saved.path} at the same seed")
    fresh = service.create_lora_training_client(base_model=a.base_model, rank=a.rank, seed=a.seed + 1)  # B = 0: the base model
    base_lp = logprobs_of(fresh.forward([datum(seq1[:-1], seq1[1:], weights=[1.0] * (len(seq1) - 1))], "cross_entropy").result())[0][len(prompt) - 1 :]
    d_base = max(abs(x - y) for x, y in zip(slp or [], base_lp))
    check("the sampler used the trained adapter, not the base", d_base > 100 * a.logprob_tol, f"max |sampler - base model| = {d_base:.3g}")

    state_path = tc.save_state("conformance-state").result().path

    def one_step(client: tinker.TrainingClient) -> list[float]:
        client.forward_backward(batch, "cross_entropy").result()
        client.optim_step(adam).result()
        return logprobs_of(client.forward(batch, "cross_entropy").result())[0]

    uninterrupted = one_step(tc)
    resumed_client = service.create_training_client_from_state_with_optimizer(state_path)
    resumed = one_step(resumed_client)
    d_opt = max(abs(x - y) for x, y in zip(uninterrupted, resumed))
    check("save_state -> load_state_with_optimizer -> step equals the uninterrupted step", d_opt <= a.resume_tol, f"{state_path}: max |logprob diff| = {d_opt:.3g} over {n} tokens (tol {a.resume_tol:g})")
    plain = service.create_training_client_from_state(state_path)
    d_plain = max(abs(x - y) for x, y in zip(uninterrupted, one_step(plain)))
    check("load_state without optimizer differs (fresh Adam moments)", d_plain > a.resume_tol, f"max |logprob diff| = {d_plain:.3g}")

    print(f"{'ALL PASSED' if not failures else 'FAILED: ' + ', '.join(failures)} ({time.time() - started:.1f} s)", flush=True)
    return 0 if not failures else 1


if __name__ == "__main__":
    os.environ.setdefault("TINKER_API_KEY", "tml-gsteer-conformance")
    sys.exit(main())
