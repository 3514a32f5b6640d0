// `gsteer demo --config configs/qref-demo.yaml` (cli/demo/qref-phases.ts) on a tiny setting with
// the committed base (models/tiny-qref): one SFT epoch, one PPO update of two prompts, one GRPO
// update of one group of two, one episode per question, two selection episodes and two chosen
// questions, a temp run dir and queue prefix. Checks what each phase leaves: the chosen questions; the base keeps every token of the SFT targets; the SFT, PPO and GRPO
// adapters exist; the table has SFT, PPO and GRPO rows on both splits whose numbers are those
// `gsteer eval` reports for those adapters (a separate `gsteer eval` run of each, its JSON report
// read back) and the three paired differences; the runs' Redis keys are gone. Growing the base
// (the model phase when the folder is missing) is tested on a tiny recipe in
// tests/cli/qref-base.test.ts.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { qwen3Tokenizer } from '../../core/tokenizer.ts';
import type { Estimate } from '../../eval/bootstrap.ts';
import { cli, REPO, removeRuns, tempRun } from './helpers.ts';
import { connect } from '../../util/redis.ts';
import { loadConfig } from '../../configs/load.ts';

const t = tempRun('qref-demo');
afterAll(() => removeRuns(t));

const pm = (e: Estimate) => (e.value === null ? 'n/a' : `${e.value.toFixed(3)} ± ${e.se === null ? 'n/a' : e.se.toFixed(3)}`);

describe('e2e: gsteer demo with env qref', () => {
  it('SFT, PPO and GRPO adapters from the committed base, and a table of gsteer eval reports', async () => {
    const model = join(REPO, 'models/tiny-qref');
    const runDir = join(t.dir, 'runs');
    const sets = [
      `runDir=${runDir}`,
      'runName=qd',
      `policy.model=${model}`,
      `queues.prefix=${t.prefix}`,
      'sft.epochs=1',
      'grpo.maxUpdates=1',
      'ppo.batchSize=2',
      'grpo.microBatchSize=2',
      'rollout.groupSize=2',
      'grpo.groupsPerUpdate=1',
      'eval.episodesPerInstance=1',
      'eval.bootstrap.samples=200',
      'demo.select.episodes=2',
      'demo.select.questions=2',
    ];
    const args = ['--config', join(REPO, 'configs/qref-demo.yaml'), ...sets.flatMap((s) => ['--set', s])];
    expect(loadConfig([join(REPO, 'configs/qref-demo.yaml')]).demo.select).toEqual({ questions: 8, episodes: 8 });
    // a GRPO run left by an earlier demo (run.json and a checkpoint) is replaced, not refused
    const earlier = join(runDir, 'qd-grpo');
    mkdirSync(join(earlier, 'checkpoints', 'step-000001'), { recursive: true });
    writeFileSync(join(earlier, 'run.json'), '{}\n');
    const demo = await cli(['demo', ...args], { GSTEER_PARTS: 'real' }).done;
    expect(demo.code, demo.stderr).toBe(0);
    expect(demo.stderr).toMatch(/policy base .*tiny-qref \(found: \d+ layers, grown by \d+ stage\(s\)/);
    expect(demo.stdout).toMatch(/PPO critic explained variance \(pooled over each quarter of updates\): /);

    // the select phase: every train question's SFT pass rate, and at most 2 unsolved ones chosen
    const root = join(runDir, 'qd');
    const sel = JSON.parse(readFileSync(join(root, 'select', 'train-ids.json'), 'utf8')) as {
      stream: string;
      chosen: string[];
      rates: { id: string; rate: number }[];
    };
    expect(sel.stream).toBe('qref-select');
    expect(sel.rates).toHaveLength(44);
    expect(sel.chosen.length).toBeGreaterThanOrEqual(1);
    expect(sel.chosen.length).toBeLessThanOrEqual(2);
    for (const id of sel.chosen) expect(sel.rates.find((r) => r.id === id)!.rate).toBeLessThan(1);
    const trainIds = sel.chosen;
    expect(demo.stderr).toContain(`training on ${trainIds.length}: ${trainIds[0]} `);

    // the base's vocabulary holds every token id of the SFT targets
    expect(existsSync(join(model, 'config.json'))).toBe(true);
    const kept = new Set((JSON.parse(readFileSync(join(model, 'vocab_map.json'), 'utf8')) as { kept_ids: number[] }).kept_ids);
    const examples = readFileSync(join(root, 'sft', 'examples.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { target: string });
    expect(examples.length).toBe(44);
    const tok = qwen3Tokenizer();
    const missing = examples.flatMap((e) => tok.encode(e.target)).filter((id) => !kept.has(id));
    expect(missing).toEqual([]);

    // the adapters
    const sft = join(root, 'sft', 'adapter');
    const ppo = join(root, 'adapters', 'policy-v000001');
    const grpo = join(runDir, 'qd-grpo', 'adapters', 'policy-v000001');
    for (const d of [sft, ppo, grpo]) expect(existsSync(join(d, 'adapter_model.safetensors')), d).toBe(true);

    // the table: its numbers are what a separate `gsteer eval` reports for each adapter and split
    const table = readFileSync(join(root, 'eval', 'demo-table.md'), 'utf8');
    for (const split of ['test', 'train']) {
      expect(table).toMatch(new RegExp(`- ${split}: PPO policy-v1 - SFT: recall refined [+-]\\d`));
      expect(table).toMatch(new RegExp(`- ${split}: GRPO policy-v1 - SFT: recall refined [+-]\\d`));
      expect(table).toMatch(new RegExp(`- ${split}: PPO policy-v1 - GRPO policy-v1: recall refined [+-]\\d`));
    }
    for (const [label, adapter] of [
      ['SFT', sft],
      ['PPO policy-v1', ppo],
      ['GRPO policy-v1', grpo],
    ] as const)
      for (const split of ['test', 'train']) {
        const out = join(t.dir, `eval-${label.split(' ')[0]}-${split}.json`);
        // eval.episodesPerInstance=1 is in args: the same settings as the demo's eval phase
        // the demo's train rows are the questions PPO and GRPO train on (grpo.trainIds)
        const ids = split === 'train' ? ['--ids', trainIds.join(',')] : [];
        const ev = await cli(['eval', ...args, '--adapter', adapter, '--split', split, ...ids, '--out', out], { GSTEER_PARTS: 'real' }).done;
        expect(ev.code, ev.stderr).toBe(0);
        const r = JSON.parse(readFileSync(out, 'utf8')) as { summary: Record<string, Estimate>; episodes: unknown[] };
        const s = r.summary;
        const questions = split === 'test' ? 19 : trainIds.length;
        const row = `| ${label} | ${split} (${questions}) | ${r.episodes.length} | ${pm(s.recall_original!)} | ${pm(s.recall_refined!)} | ${pm(s.reward!)} | ${pm(s.invalid_rate!)} | ${pm(s.filter_precision!)} | ${pm(s.filter_recall!)} |`;
        expect(table.split('\n'), `${label} ${split}`).toContain(row);
      }

    const redis = connect('redis://127.0.0.1:6379');
    try {
      expect(await redis.keys(`${t.prefix}*`)).toEqual([]);
    } finally {
      redis.disconnect();
    }
  }, 420_000);
});
