// The SFT turn eval (`gsteer sft eval`, the demo's sft phase): does the SFT policy speak the turn grammar? Samples the policy's turn
// for N held-out example prompts (a fixed seeded sample) with the rollout sampling settings
// and reports the share that parse as valid turns (structured/turn/grammar.ts); a turn that hits
// rollout.maxTokens before <|im_end|> counts as invalid (truncated), as in a rollout.
import type { RunConfig } from '../configs/schema.ts';
import { parseTurn } from '../structured/turn/grammar.ts';
import { Generation, type FinishReason } from '../serve/generation.ts';
import { serveModelOf } from '../serve/tfjs-model.ts';
import { selectBackend, type BackendKind } from '../model/backend.ts';
import { loadPeftAdapter } from '../model/lora/index.ts';
import { loadModel } from '../model/index.ts';
import { encodeChat, qwen3Tokenizer } from '../core/tokenizer.ts';
import { progressBar } from '../util/progress.ts';
import { InputError } from '../util/errors.ts';
import { Rng } from '../util/rng.ts';
import { heldOutMask, readSftExamples } from '../trainer/sft/tokens.ts';
import type { SftExample } from '../data/sft/example.ts';

export interface EvalOptions {
  model: string;
  adapter: string | null;
  examples: string;
  n: number;
  seed: number; // picks the sample and seeds sampling
  splitSeed: number; // the seed the held-out split was drawn with (cfg.seed)
  heldOutFraction: number;
  temperature: number;
  topP: number;
  maxTokens: number;
  backend: BackendKind;
  progress?: boolean;
}

export interface EvalResult {
  n: number;
  valid: number;
  rate: number;
  reasons: Record<string, number>; // invalid reason -> count
  byAction: Record<string, { n: number; valid: number }>; // by the example's target action
  samples: { trajectoryId: string; step: number; text: string; ok: boolean }[];
}

/** Why a sampled turn is invalid (null = valid): cut at maxTokens = truncated, else the parser's reason. */
export function invalidReason(text: string, finish: FinishReason): string | null {
  if (finish === 'length') return 'truncated';
  const parsed = parseTurn(text);
  return parsed.ok ? null : parsed.reason;
}

/**
 * The prompts of N sampled turns: held-out examples (heldOutMask: prompts never trained on)
 * in an order drawn by Rng.derive(seed, 'sft-eval'). N up to the number held out takes
 * each at most once; a larger N goes round that order again (like `n` > 1 in an OpenAI or
 * vLLM request), so 3 x 46 samples every held-out prompt three times. Turn i is sampled
 * with its own stream (choice index i), so repeats of a prompt are independent samples.
 */
export function evalSample(examples: readonly SftExample[], o: Pick<EvalOptions, 'n' | 'seed' | 'splitSeed' | 'heldOutFraction'>): SftExample[] {
  const mask = heldOutMask(examples, o.splitSeed, o.heldOutFraction);
  const held = examples.filter((_, i) => mask[i]);
  if (held.length === 0) throw new InputError(`no held-out example (sft.heldOutFraction=${o.heldOutFraction}, seed ${o.splitSeed}); raise sft.heldOutFraction`);
  const order = Rng.derive(o.seed, 'sft-eval').shuffle(held);
  return Array.from({ length: o.n }, (_, i) => order[i % order.length]!);
}

export async function evalValidTurns(o: EvalOptions): Promise<EvalResult> {
  await selectBackend(o.backend, () => {});
  const model = await loadModel(o.model);
  const adapter = o.adapter ? loadPeftAdapter(o.adapter, model) : null;
  const serve = serveModelOf(model);
  const tok = qwen3Tokenizer();
  const sample = evalSample(readSftExamples(o.examples), o);
  const bar = o.progress === false ? null : progressBar('sft eval', sample.length);
  const r: EvalResult = { n: 0, valid: 0, rate: 0, reasons: {}, byAction: {}, samples: [] };
  for (const [i, ex] of sample.entries()) {
    const g = new Generation(serve, adapter, tok, {
      promptIds: encodeChat(tok, ex.input),
      maxTokens: o.maxTokens,
      sampling: { temperature: o.temperature, topP: o.topP, topK: 0 },
      seed: o.seed,
      choiceIndex: i,
      stop: [],
      stopTokenIds: [],
      ignoreEos: false,
      topLogprobs: 0,
    });
    while (!(await g.step()));
    const out = g.result();
    const reason = invalidReason(out.text, out.finishReason);
    const ok = reason === null;
    r.n++;
    if (ok) r.valid++;
    if (reason) r.reasons[reason] = (r.reasons[reason] ?? 0) + 1;
    const a = (r.byAction[ex.action] ??= { n: 0, valid: 0 });
    a.n++;
    if (ok) a.valid++;
    r.samples.push({ trajectoryId: ex.trajectoryId, step: ex.step, text: out.text, ok });
    bar?.tick(1, `valid ${r.valid}/${r.n}`);
  }
  bar?.done();
  r.rate = r.n ? r.valid / r.n : 0;
  adapter?.dispose();
  model.dispose();
  return r;
}

export function formatEval(r: EvalResult): string {
  const acts = Object.entries(r.byAction)
    .map(([k, v]) => `${k} ${v.valid}/${v.n}`)
    .join('  ');
  const why =
    Object.entries(r.reasons)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ') || 'none';
  return `valid turns ${r.valid}/${r.n} = ${(100 * r.rate).toFixed(1)}%  (by target action: ${acts}; invalid: ${why})`;
}

/** A run config's eval settings: the rollout's sampling, its split, backend and base; the caller picks the adapter, examples and sample. */
export function evalOptionsOf(cfg: RunConfig, o: Pick<EvalOptions, 'adapter' | 'examples' | 'n' | 'seed'> & { model?: string }): EvalOptions {
  return {
    model: o.model ?? cfg.policy.model,
    adapter: o.adapter,
    examples: o.examples,
    n: o.n,
    seed: o.seed,
    splitSeed: cfg.seed,
    heldOutFraction: cfg.sft.heldOutFraction,
    temperature: cfg.rollout.temperature,
    topP: cfg.rollout.topP,
    maxTokens: cfg.rollout.maxTokens,
    backend: cfg.trainer.backend,
  };
}
