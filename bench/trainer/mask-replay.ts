// What the grammar constraint costs the trainer at Qwen3's full vocabulary (151,936 ids),
// before and after issue 22, in one run (not part of npm test). Usage:
//   node --import tsx bench/trainer/mask-replay.ts [--turns 4] [--prompt 128] [--completion 96]
//        [--micro 2] [--reps 2] [--threads N] [--backend wasm]
// Turns: real policy turns (the demo's SFT targets, `gsteer sft build`), tokenized with the
// Qwen3 tokenizer + EOS and replayed under the policy grammar and its token filter
// (max_tokens 512, the demo's); each trainer sequence is the first --prompt ids of the turn's
// real prompt + the first --completion ids of the turn, every completion position masked.
// Model: the tiny preset's shapes at V = 151,936 with random weights (bench/trainer/random-model.ts).
//   replay per token  xgrammar mask + the policy filter per token; before: filter id by id
//                     (applyPerId), after: on bitmask words (apply); same masks
//   step rows         one accumulateGradients over the turns (GRPO loss, --micro per micro-batch):
//                     unmasked (the baseline), masked through an [N, V] bias built by a gather
//                     (before) or a one-hot matmul (stop 28), or with no bias (after: the sparse
//                     masked head, model/masked-head.ts, the default at this vocabulary)
//   critical path     what the trainer waits for, replay included: before = in-process replay,
//                     then the step; after = the replay pool's worker threads started with the
//                     step (structured/replay-pool.ts; warm: its grammars compiled by a first batch)
// Shares are (critical path - unmasked step) / unmasked step, measured in the same run; a
// negative share: the masked step costs less than the unmasked one (the sparse head computes
// positions with a few allowed ids on those rows only).
import { parseArgs } from 'node:util';
import * as tf from '@tensorflow/tfjs';
import { POLICY_GRAMMAR } from '../../structured/turn/grammar-ebnf.ts';
import { encodeChat, qwen3Tokenizer } from '../../core/tokenizer.ts';
import type { TurnConstraint } from '../../core/types.ts';
import { selectBackend, type BackendKind } from '../../model/backend.ts';
import type { Qwen3Config } from '../../model/config.ts';
import { createLora } from '../../model/lora/lora.ts';
import { PRESETS } from '../../model/init.ts';
import { maskedPath, type MaskVia, type TokenMasks } from '../../model/token-masks.ts';
import { LoraSchema } from '../../configs/schema.ts';
import { compileConstraint, qwen3Vocab, replayConstraint, specHash, type ConstraintSpec } from '../../structured/index.ts';
import { POLICY_FILTER_VERSION } from '../../structured/policy-filter.ts';
import { turnMasks, type MaskedTurn } from '../../structured/turn-masks.ts';
import type { Policy } from '../../trainer/policy.ts';
import { loraPolicy } from '../../trainer/policy-lora.ts';
import { ReplayPool } from '../../structured/replay-pool.ts';
import { accumulateGradients, type PolicyBatch } from '../../trainer/step.ts';
import { replayParts, sftExamples, type Parts } from '../serve/replay-parts.ts';
import { randomModel } from './random-model.ts';
import { EVERY_GRAMMAR } from '../../rollout/env/grammars.ts';

const { values } = parseArgs({
  options: {
    turns: { type: 'string', default: '4' },
    prompt: { type: 'string', default: '128' },
    completion: { type: 'string', default: '96' },
    micro: { type: 'string', default: '2' },
    reps: { type: 'string', default: '2' },
    threads: { type: 'string' },
    backend: { type: 'string', default: 'wasm' },
  },
});
const TURNS = Number(values.turns);
const P = Number(values.prompt);
const S = Number(values.completion);
const MICRO = Number(values.micro);
const REPS = Number(values.reps);
const MAX_TOKENS = 512; // configs/demo.yaml rollout.maxTokens
const EOS = 151645; // <|im_end|>
const V = 151936;

await selectBackend(values.backend as BackendKind, () => {});
const tok = qwen3Tokenizer();
const spec: ConstraintSpec = { type: 'grammar', grammar: POLICY_GRAMMAR, filter: 'policy_turn' };
const vocab = qwen3Vocab();
const compiled = await compileConstraint(spec, vocab);
const constraint: TurnConstraint = {
  specSha256: specHash(spec),
  tokenFilter: 'policy_turn',
  tokenFilterVersion: POLICY_FILTER_VERSION,
  maxTokens: MAX_TOKENS,
  reported: true,
};

// Real turns the grammar + filter accept in full (a few SFT targets are longer than the caps allow).
const turns: MaskedTurn[] = [];
for (const ex of sftExamples(4 * TURNS)) {
  if (turns.length === TURNS) break;
  const ids = [...tok.encode(ex.target), EOS];
  const r = await replayConstraint(compiled, { maxTokens: MAX_TOKENS }, ids);
  if (r.accepted && ids.length >= S) turns.push({ promptIds: encodeChat(tok, ex.input).slice(0, P), completionIds: ids, constraint });
}
if (turns.length < TURNS) throw new Error(`only ${turns.length} SFT targets of >= ${S} tokens replay under the grammar`);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (f: () => Promise<unknown> | unknown) => async () => {
  const t0 = performance.now();
  await f();
  return performance.now() - t0;
};
async function timeIt(f: () => Promise<number>): Promise<number> {
  await f(); // warm-up
  const xs: number[] = [];
  for (let i = 0; i < REPS; i++) xs.push(await f());
  return median(xs);
}

const progress = (what: string) => console.error(`mask-replay: ${what} (${(performance.now() / 1000).toFixed(0)} s)`);
progress(`${turns.length} turns replay under the grammar; timing the replay per token`);
// 1. replay per token, full vocabulary: filter id by id vs on words (alternated, summed over two rounds)
const completions = turns.map((t) => [...t.completionIds]);
const parts = { applyPerId: [] as Parts[], apply: [] as Parts[] };
for (let r = 0; r < 2; r++) for (const f of ['applyPerId', 'apply'] as const) parts[f].push(await replayParts(compiled, vocab, completions, MAX_TOKENS, f));
const perToken = (ps: Parts[]) => {
  const n = ps.reduce((s, p) => s + p.tokens, 0);
  const per = (k: 'maskMs' | 'filterMs' | 'allowedMs' | 'acceptMs') => ps.reduce((s, p) => s + p[k], 0) / n;
  return { mask: per('maskMs'), filter: per('filterMs'), allowed: per('allowedMs'), accept: per('acceptMs') };
};

// 2. the step: sequences = prompt + the first S completion ids, their masks the replay's prefix
const cut = (m: TokenMasks, t: MaskedTurn): TokenMasks => ({ table: m.table, index: Array.from(m.index).slice(0, t.promptIds.length + S) });
const trainTurns = turns.map((t) => ({ ...t, completionIds: t.completionIds.slice(0, S) }));
const inputIds = trainTurns.map((t) => [...t.promptIds, ...t.completionIds]);
// what maskPath 'auto' picks for this head
const defaultPath =
  maskedPath({ masks: [], rows: V, vocab: null, index: new Int32Array(0) }) === 'sparse' ? 'no bias: the sparse masked head' : 'an [N, V] bias';
const base: PolicyBatch = {
  kind: 'policy',
  inputIds,
  completionMask: trainTurns.map((t) => [...t.promptIds.map(() => 0), ...t.completionIds.map(() => 1)]),
  advantages: inputIds.map((_, b) => (b % 2 ? -1 : 1)),
};
const cfg: Qwen3Config = { ...PRESETS.tiny!, vocabSize: V };
const model = randomModel(cfg);
const adapter = createLora(model, LoraSchema.parse({ r: 8 }), 7);
const policy = loraPolicy(model, adapter);
const via = (maskPath: MaskVia): Policy => ({ ...policy, score: (ids, o, m) => policy.score(ids, { ...o, maskPath } as typeof o, m) });
const grpo = { lossType: 'grpo' as const, epsilon: 0.2, betaKl: 0, tisCap: null };
const step = (p: Policy, batch: PolicyBatch) =>
  tf.dispose(accumulateGradients(p, batch, { microBatchSize: MICRO, grpo, dropoutSeed: 1, withEntropy: true }).grads);

/** In-process replay of the turns (before: filter id by id), as TokenMasks of the train sequences. */
async function replayInProcess(perIdFilter: boolean): Promise<TokenMasks[]> {
  const out: TokenMasks[] = [];
  for (const t of turns) {
    const r = await replayConstraint(compiled, { maxTokens: MAX_TOKENS, perIdFilter }, t.completionIds);
    out.push(cut(turnMasks(t.promptIds.length, t.completionIds.length, r.masks, r.maskIndex), t));
  }
  return out;
}
const masks = await replayInProcess(false);
const pool = new ReplayPool(EVERY_GRAMMAR, values.threads ? Number(values.threads) : undefined);
{
  const warm = pool.start(turns, model); // each worker builds the vocabulary and compiles the grammar once
  warm.stats();
  pool.release(warm);
}

progress('replay pool warm; timing the step: unmasked, gather bias, one-hot bias, the default (sparse), then the critical paths');
const unmasked = await timeIt(ms(() => step(policy, base)));
const stepGather = await timeIt(ms(() => step(via('gather'), { ...base, masks })));
const stepMatmul = await timeIt(ms(() => step(via('matmul'), { ...base, masks })));
const stepAuto = await timeIt(ms(() => step(policy, { ...base, masks })));
progress('steps done; in-process replay');
const replayBefore = await timeIt(ms(() => replayInProcess(true)));
const replayAfter = await timeIt(ms(() => replayInProcess(false)));
const criticalBefore = replayBefore + stepGather;
const criticalInProcess = replayAfter + stepAuto;
let waited = 0;
const criticalAfter = await timeIt(
  ms(() => {
    const pending = pool.start(turns, model);
    const lazy = new Proxy(new Array<TokenMasks | null>(turns.length).fill(null), {
      get: (target, k, r) => (typeof k === 'string' && /^\d+$/.test(k) ? cut(pending.masks[Number(k)]!, turns[Number(k)]!) : Reflect.get(target, k, r)),
    });
    step(policy, { ...base, masks: lazy });
    waited = pending.stats()['constraint/replay_wait_seconds']! * 1000;
    pool.release(pending);
  }),
);
await pool.close();
adapter.dispose();
model.dispose();

const tokens = parts.apply.reduce((s, p) => s + p.tokens, 0) / 2;
const b = perToken(parts.applyPerId);
const a = perToken(parts.apply);
console.log(
  `tfjs ${tf.getBackend()}; ${TURNS} real policy turns (demo SFT targets, ${tokens} tokens, max_tokens ${MAX_TOKENS}), Qwen3 vocabulary 151,936 ids; ${pool.threads} replay worker thread(s)\n`,
);
console.log('Replay per token (policy grammar + filter):\n');
console.log('| filter | xgrammar mask ms | filter ms | allowed ids ms | accept ms | total ms | filter after/before |');
console.log('|---|---|---|---|---|---|---|');
for (const [name, x] of [
  ['before (id by id)', b],
  ['after (bitmask words)', a],
] as const)
  console.log(
    `| ${name} | ${x.mask.toFixed(3)} | ${x.filter.toFixed(3)} | ${x.allowed.toFixed(3)} | ${x.accept.toFixed(3)} | ${(x.mask + x.filter + x.allowed + x.accept).toFixed(3)} | ${x === a ? `${(a.filter / b.filter).toFixed(2)}x` : ''} |`,
  );
console.log(
  `\nTrainer step, ${TURNS} sequences (distinct masks per sequence: ${masks.map((m) => new Set(Array.from(m.index).filter((k) => k >= 0)).size).join(', ')}) of ${P} prompt + ${S} completion tokens (every completion position masked), micro-batch ${MICRO}, median of ${REPS}:\n`,
);
console.log('| path | ms | vs unmasked step | constraint share of the step |');
console.log('|---|---|---|---|');
const row = (name: string, x: number) =>
  console.log(`| ${name} | ${x.toFixed(0)} | ${(x / unmasked).toFixed(2)}x | ${((100 * (x - unmasked)) / unmasked).toFixed(1)}% |`);
row('step, unmasked (baseline)', unmasked);
row('step, masked: [N, V] bias by a gather (before)', stepGather);
row('step, masked: [N, V] bias by a one-hot matmul (stop 28)', stepMatmul);
row(`step, masked: the default (${defaultPath}) (after)`, stepAuto);
row('critical path before: in-process replay (filter id by id) + gather step', criticalBefore);
row("critical path after, no spare core: in-process replay (bitmask words) + the trainer's step", criticalInProcess);
row(`critical path after: replay pool during the step (waited ${waited.toFixed(0)} ms)`, criticalAfter);
console.log(
  `\nin-process replay alone: ${replayBefore.toFixed(0)} ms before, ${replayAfter.toFixed(0)} ms after; critical path after/before: ${(criticalAfter / criticalBefore).toFixed(2)}x with the pool, ${(criticalInProcess / criticalBefore).toFixed(2)}x in process`,
);
