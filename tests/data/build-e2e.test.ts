// From raw PDR-Bench-shaped files to an SFT adapter, the way a user runs it:
// `gsteer data split` -> `gsteer data build` (embedded rules) -> `gsteer data validate`
// -> `gsteer sft build` -> SFT for a few steps on a micro model. Plus the leak check of
// `data validate` against a planted leak.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run as dataCommand } from '../../cli/commands/data.ts';
import { run as sftCommand } from '../../cli/commands/sft.ts';
import { validateFiles } from '../../data/validate.ts';
import type { Instance, UserState } from '../../data/schema.ts';
import { resolveConfig } from '../../configs/load.ts';
import { runSft } from '../../trainer/sft/train.ts';
import { initModel, baseKeptIds, PRESETS } from '../../model/init.ts';
import { qwen3Tokenizer } from '../../core/tokenizer.ts';
import { tokenizeExample } from '../../trainer/sft/tokens.ts';

const raw = join(import.meta.dirname, '../../data/raw-demo');
let root: string;
let out: string;
const lines = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'gsteer-build-e2e-'));
  out = join(root, 'built');
  vi.spyOn(console, 'log').mockImplementation(() => {});
  vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  expect(await dataCommand(['split', raw, '--seed', '1', '--out', join(root, 'split.jsonl')])).toBe(0);
  expect(await dataCommand(['build', raw, '--out', out, '--seed', '1'])).toBe(0);
  vi.restoreAllMocks();
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('raw files -> gsteer data build -> validate -> sft build -> sft train', () => {
  it('the split file and the built instances agree; every test group is present', () => {
    const placed = lines(join(root, 'split.jsonl')) as { id: string; split: string; group: string | null }[];
    const inst = lines(join(out, 'instances.jsonl')) as Instance[];
    expect(inst.map((i) => [i.id, i.split])).toEqual(placed.map((p) => [p.id, p.split]));
    expect(new Set(placed.map((p) => p.group))).toEqual(new Set([null, 'seen', 'unseen_user', 'unseen_task', 'both_unseen']));
    expect(placed.filter((p) => p.split === 'test')).toHaveLength(6); // round(0.3 x 20)
  });

  it('--dry-run counts the calls by hand: 7 distinct candidates prompts + 4 x 20 + 14 profiles = 101; --show-prompts prints every step', async () => {
    // candidates: 5 task wordings + maya-trip's and tomas-laptop's own = 7 distinct requests;
    // profiles: every one of the 14 training pairs (seed 1) has another training pair of its user.
    const logs: string[] = [];
    vi.spyOn(console, 'log').mockImplementation((l: string) => void logs.push(l));
    const rc = await dataCommand([
      'build',
      raw,
      '--out',
      join(root, 'dry'),
      '--seed',
      '1',
      '--dry-run',
      '--llm-base-url',
      'http://127.0.0.1:9/v1',
      '--llm-model',
      'm',
    ]);
    expect(await dataCommand(['build', '--show-prompts'])).toBe(0);
    vi.restoreAllMocks();
    expect(rc).toBe(0);
    expect(logs[0]).toBe(
      'LLM build of 20 pairs: 7 candidates calls (one per distinct query and rubric) + 80 step calls (4 per pair) + 14 profile calls = at most 101 calls (fewer when cached in DIR/cache)',
    );
    expect(logs.filter((l) => l.startsWith('== ')).map((l) => l.split('\n')[0])).toEqual(
      ['candidates', 'validate', 'seeds', 'ieg', 'slots', 'profile'].map((s) => `== ${s} (system)`),
    );
  });

  it('writes what data validate accepts: canonical slots, offline profiles for train only, memories of train targets only', () => {
    const files = [join(out, 'instances.jsonl'), join(out, 'user_states.jsonl')];
    expect(validateFiles(files)).toEqual([]);
    const inst = lines(files[0]!) as Instance[];
    const states = lines(files[1]!) as UserState[];
    for (const i of inst) {
      for (const t of i.targets) expect(t.slot?.name).toMatch(/^[a-z][a-z0-9_]*$/);
      expect(i.offlineProfile === undefined).toBe(i.split === 'test');
    }
    const trainIds = new Set(inst.filter((i) => i.split === 'train').map((i) => i.id));
    const memories = states.flatMap((s) => s.memories);
    expect(memories.every((m) => trainIds.has(m.sourceInstance ?? ''))).toBe(true);
    expect(memories).toHaveLength(inst.filter((i) => i.split === 'train').reduce((a, i) => a + i.targets.length, 0));
    // users without a training pair have no offline state
    const trainUsers = new Set(inst.filter((i) => i.split === 'train').map((i) => i.userId));
    expect(states.map((s) => s.userId).sort()).toEqual([...trainUsers].sort());
  });

  it('data validate reports a planted leak: a test target value in a training memory', async () => {
    const inst = lines(join(out, 'instances.jsonl')) as Instance[];
    const test = inst.find((i) => i.split === 'test')!;
    const states = readFileSync(join(out, 'user_states.jsonl'), 'utf8').trim().split('\n');
    const first = JSON.parse(states[0]!) as UserState;
    first.memories.push({ name: 'planted', purpose: 'a leak', value: `Note: ${test.targets[0]!.seedAnswer}` });
    states[0] = JSON.stringify(first);
    writeFileSync(join(root, 'user_states.jsonl'), `${states.join('\n')}\n`);
    const problems = validateFiles([join(out, 'instances.jsonl'), join(root, 'user_states.jsonl')]);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ line: 1, instanceId: first.userId, field: `memories[${first.memories.length - 1}].value` });
    expect(problems[0]!.message).toContain(`test instance "${test.id}" target "${test.targets[0]!.id}"`);
    // and a memory that names a test instance as its source
    appendFileSync(
      join(root, 'user_states.jsonl'),
      `${JSON.stringify({ userId: 'zz', memories: [{ name: 'x', purpose: 'y', value: 'z', sourceInstance: test.id }] })}\n`,
    );
    const again = validateFiles([join(out, 'instances.jsonl'), join(root, 'user_states.jsonl')]);
    expect(again.map((p) => p.field)).toEqual([`memories[${first.memories.length - 1}].value`, 'memories[0].sourceInstance']);
  });

  it('data validate finds a test value planted without its description prefix, but not a value a training target of the user shares', async () => {
    const inst = lines(join(out, 'instances.jsonl')) as Instance[];
    const states = readFileSync(join(out, 'user_states.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as UserState);
    const trainValues = new Set(
      inst.filter((i) => i.split === 'train').flatMap((i) => i.targets.map((t) => t.seedAnswer.slice(t.description.length + 1).trim())),
    );
    // a test target whose bare value no training target has (so its appearance is a leak)
    const test = inst
      .filter((i) => i.split === 'test')
      .flatMap((i) => i.targets.map((t) => ({ i, t })))
      .find(({ t }) => !trainValues.has(t.seedAnswer.slice(t.description.length + 1).trim()))!;
    const bare = test.t.seedAnswer.slice(test.t.description.length + 1).trim(); // "<Description>: " removed
    expect(test.t.seedAnswer.startsWith(`${test.t.description}: `)).toBe(true);
    const planted = structuredClone(states);
    planted[0]!.memories.push({ name: 'planted', purpose: 'a leak', value: `Remember: ${bare.replace(/\.$/, '')}` });
    writeFileSync(join(root, 'bare-leak.jsonl'), planted.map((s) => `${JSON.stringify(s)}\n`).join(''));
    const problems = validateFiles([join(out, 'instances.jsonl'), join(root, 'bare-leak.jsonl')]);
    expect(problems.map((p) => [p.field, p.message.includes(`target "${test.t.id}"`)])).toEqual([[`memories[${planted[0]!.memories.length - 1}].value`, true]]);
    // the built state as it is: every memory value is its training target's own, so nothing is reported
    expect(validateFiles([join(out, 'instances.jsonl'), join(out, 'user_states.jsonl')])).toEqual([]);
  });

  it('sft build takes the built instances; SFT trains on them for a few steps', async () => {
    const examples = join(root, 'examples.jsonl');
    vi.spyOn(console, 'log').mockImplementation(() => {});
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const rc = await sftCommand([
      'build',
      '--data',
      join(out, 'instances.jsonl'),
      '--out',
      examples,
      '--seed',
      '1',
      '--set',
      'sft.ordersPerSubgraph=1',
      '--set',
      'sft.optionalRatios=[0]',
    ]);
    vi.restoreAllMocks();
    expect(rc).toBe(0);
    const ex = lines(examples) as { input: { content: string }[]; target: string; instanceId: string }[];
    const train = (lines(join(out, 'instances.jsonl')) as Instance[]).filter((i) => i.split === 'train');
    expect(new Set(ex.map((e) => e.instanceId))).toEqual(new Set(train.map((i) => i.id)));
    // slot names are the canonical ones, never target ids; the profile shown is the offline summary
    const canonical = new Set(train.flatMap((i) => i.targets.map((t) => t.slot!.name)));
    const named = ex.flatMap((e) => [...e.target.matchAll(/^- ([a-z0-9_]+) \|/gm)].map((m) => m[1]));
    expect(named.length).toBeGreaterThan(0);
    expect(named.every((n) => canonical.has(n!))).toBe(true);
    const withProfile = train.find((i) => i.offlineProfile)!;
    expect(
      ex
        .find((e) => e.instanceId === withProfile.id)!
        .input.map((m) => m.content)
        .join('\n'),
    ).toContain(withProfile.offlineProfile!.slice(0, 40));

    // a micro model whose vocabulary holds the examples' tokens, then 2 SFT updates
    const tok = qwen3Tokenizer();
    const kept = new Set(baseKeptIds());
    // the four shortest examples: a real model step on CPU costs by sequence length
    const few = [...ex].sort((a, b) => JSON.stringify(a).length - JSON.stringify(b).length).slice(0, 4);
    writeFileSync(join(root, 'few.jsonl'), few.map((e) => JSON.stringify(e)).join('\n') + '\n');
    few.forEach((e, i) => tokenizeExample(tok, e as never, i).inputIds.forEach((id) => kept.add(id)));
    const modelDir = join(root, 'micro');
    initModel(
      modelDir,
      { ...PRESETS.tiny!, hiddenSize: 16, intermediateSize: 32, numHiddenLayers: 1, numAttentionHeads: 2, numKeyValueHeads: 1, headDim: 8 },
      { seed: 3, keptIds: [...kept] },
    );
    const cfg = resolveConfig({
      runName: 'sft',
      runDir: root,
      seed: 5,
      policy: { model: modelDir },
      trainer: { backend: 'cpu' },
      lora: { r: 2, alpha: 4, dropout: 0, targetModules: ['q_proj', 'v_proj'] },
      sft: { examples: join(root, 'few.jsonl'), maxSteps: 2, batchSize: 2, microBatchSize: 2, heldOutFraction: 0, evalEvery: 2, maxSeqLen: 4096 },
    });
    const r = await runSft(cfg, { log: () => {}, progress: false });
    expect(r.steps).toBe(2);
  }, 120_000);
});
