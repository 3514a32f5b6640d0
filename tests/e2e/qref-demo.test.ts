// `gsteer demo --config configs/qref-demo.yaml` (cli/demo/qref-phases.ts) on a tiny setting: one
// SFT epoch, one PPO update of two prompts, short turns, a temp model folder, run dir and queue
// prefix. Checks what each phase leaves: the stand-in base keeps every token of the SFT targets;
// the SFT and PPO adapters exist; the table has SFT and PPO rows on both splits whose numbers
// are those `gsteer eval` reports for those adapters (a separate `gsteer eval` run of each,
// its JSON report read back); the run's Redis keys are gone.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { qwen3Tokenizer } from '../../core/tokenizer.ts';
import type { Estimate } from '../../eval/bootstrap.ts';
import { cli, REPO, removeRuns, tempRun } from './helpers.ts';
import { connect } from '../../util/redis.ts';

const t = tempRun('qref-demo');
afterAll(() => removeRuns(t));

const pm = (e: Estimate) => (e.value === null ? 'n/a' : `${e.value.toFixed(3)} ± ${e.se === null ? 'n/a' : e.se.toFixed(3)}`);

describe('e2e: gsteer demo with env qref', () => {
  it('makes the stand-in base, SFT and PPO adapters, and a table of gsteer eval reports', async () => {
    const model = join(t.dir, 'tiny-qref');
    const runDir = join(t.dir, 'runs');
    const sets = [
      `runDir=${runDir}`, 'runName=qd', `policy.model=${model}`, `queues.prefix=${t.prefix}`,
      'sft.epochs=1', 'grpo.maxUpdates=1', 'ppo.batchSize=2', 'grpo.microBatchSize=2', 'rollout.maxTokens=24', 'eval.maxTokens=24', 'eval.bootstrap.samples=200',
    ];
    const args = ['--config', join(REPO, 'configs/qref-demo.yaml'), ...sets.flatMap((s) => ['--set', s])];
    const demo = await cli(['demo', ...args], { GSTEER_PARTS: 'real' }).done;
    expect(demo.code, demo.stderr).toBe(0);
    expect(demo.stderr).toMatch(/random-init tiny stand-in/);
    expect(demo.stdout).toMatch(/no learning is expected/);

    // the base: created, and its vocabulary holds every token id of the SFT targets
    const root = join(runDir, 'qd');
    expect(existsSync(join(model, 'config.json'))).toBe(true);
    const kept = new Set((JSON.parse(readFileSync(join(model, 'vocab_map.json'), 'utf8')) as { kept_ids: number[] }).kept_ids);
    const examples = readFileSync(join(root, 'sft', 'examples.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { target: string });
    expect(examples.length).toBe(44);
    const tok = qwen3Tokenizer();
    const missing = examples.flatMap((e) => tok.encode(e.target)).filter((id) => !kept.has(id));
    expect(missing).toEqual([]);

    // the adapters
    const sft = join(root, 'sft', 'adapter');
    const ppo = join(root, 'adapters', 'policy-v000001');
    for (const d of [sft, ppo]) expect(existsSync(join(d, 'adapter_model.safetensors')), d).toBe(true);

    // the table: its numbers are what a separate `gsteer eval` reports for each adapter and split
    const table = readFileSync(join(root, 'eval', 'demo-table.md'), 'utf8');
    expect(table).toMatch(/PPO policy-v1 - SFT: recall refined [+-]\d/);
    for (const [label, adapter] of [['SFT', sft], ['PPO policy-v1', ppo]] as const)
      for (const split of ['test', 'train']) {
        const out = join(t.dir, `eval-${label.split(' ')[0]}-${split}.json`);
        const ev = await cli(['eval', ...args, '--adapter', adapter, '--split', split, '--out', out], { GSTEER_PARTS: 'real' }).done;
        expect(ev.code, ev.stderr).toBe(0);
        const r = JSON.parse(readFileSync(out, 'utf8')) as { summary: Record<string, Estimate>; episodes: unknown[] };
        const s = r.summary;
        const questions = split === 'test' ? 19 : 44;
        const row = `| ${label} | ${split} (${questions}) | ${r.episodes.length} | ${pm(s.recall_original!)} | ${pm(s.recall_refined!)} | ${pm(s.reward!)} | ${pm(s.invalid_rate!)} | ${pm(s.filter_precision!)} | ${pm(s.filter_recall!)} |`;
        expect(table.split('\n'), `${label} ${split}`).toContain(row);
      }

    const redis = connect('redis://127.0.0.1:6379');
    try {
      expect(await redis.keys(`${t.prefix}*`)).toEqual([]);
    } finally {
      redis.disconnect();
    }
  }, 300_000);
});
