// The length budgets (method §7.8; data/sft/budget.ts): Qwen3 token counts, the target kept
// whole, the oldest history left out first, a drop only when nothing else fits, every case
// counted per action kind; `gsteer sft build` prints those counts; each update reports the
// share of turns cut at rollout.maxTokens.
import { readFileSync, rmSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { IM_END_ID, qwen3Tokenizer, renderChatML } from '../../core/tokenizer.ts';
import { buildPolicyMessages, type HistoryEntry } from '../../rollout/prompt.ts';
import { trimHistory } from '../../core/prompt-history.ts';
import { BudgetCounts, fitExample, formatBudget } from '../../data/sft/budget.ts';
import { run as sftCommand } from '../../cli/commands/sft.ts';
import { updateMetrics } from '../../workers/update-metrics.ts';

const tok = qwen3Tokenizer();
const entry = (k: number): HistoryEntry => ({
  action: 'ASK',
  execute: `Question number ${k} about the trip?`,
  observation: { kind: 'answer', question: `q${k}`, answer: `Answer ${k}: a fairly long reply that costs a few tokens.`, targetId: null },
});
const input = buildPolicyMessages({ query: 'Plan a trip.', profile: '', state: [], history: [entry(1), entry(2), entry(3)], turn: 4, maxTurns: 12 });
const target = 'STATE:\nPLAN: enough\nACTION: STOP\nEXECUTE: Plan a trip for two.';
const len = (msgs: typeof input) => tok.encode(renderChatML(msgs, true)).length + tok.encode(target).length + 1;

describe('trimHistory', () => {
  it('leaves out the oldest entries with their observation lines and says how many; kept entries keep their numbers', () => {
    const text = input[1]!.content;
    const one = trimHistory(text, 1);
    expect(one).toContain('HISTORY:\n(1 earlier action omitted)\n[2] ASK: Question number 2 about the trip?\n  USER: Answer 2');
    expect(one).not.toContain('[1] ASK');
    expect(trimHistory(text, 3)).toMatch(/HISTORY:\n\(3 earlier actions omitted\)$/);
    expect(trimHistory(text, 9)).toBe(trimHistory(text, 3));
    expect(trimHistory('no history here', 2)).toBe('no history here');
  });
});

describe('fitExample', () => {
  const full = len(input);
  const minusOne = len([input[0]!, { ...input[1]!, content: trimHistory(input[1]!.content, 1) }]);
  const bare = len([input[0]!, { ...input[1]!, content: trimHistory(input[1]!.content, 3) }]);

  it('keeps an example that fits; trims the oldest history to fit; drops what cannot fit even with no history', () => {
    expect(fitExample(tok, input, target, full).fate).toBe('fits');
    const t = fitExample(tok, input, target, minusOne);
    expect([t.fate, t.dropped, t.untrimmed]).toEqual(['trimmed', 1, full]);
    expect(t.targetIds).toEqual([...tok.encode(target), IM_END_ID]); // the target whole
    expect(t.promptIds.length + t.targetIds.length).toBeLessThanOrEqual(minusOne);
    expect(fitExample(tok, input, target, minusOne - 1).dropped).toBeGreaterThan(1);
    expect(fitExample(tok, input, target, bare - 1).fate).toBe('dropped');
    expect(fitExample(tok, input, target, minusOne, false).fate).toBe('dropped'); // sft.overBudget drop
  });

  it('counts per action kind', () => {
    const c = new BudgetCounts(minusOne, 10);
    c.add('STOP', fitExample(tok, input, target, minusOne));
    c.add('STOP', fitExample(tok, [input[0]!, { ...input[1]!, content: trimHistory(input[1]!.content, 1) }], 'x', minusOne));
    c.add('ASK', fitExample(tok, input, target, bare - 1));
    expect(Object.fromEntries(c.byKind)).toEqual({ STOP: { fits: 1, trimmed: 1, dropped: 0 }, ASK: { fits: 0, trimmed: 0, dropped: 1 } });
    const text = formatBudget(c);
    expect(text).toContain('  STOP            2 examples: over budget      1 (50.0%), trimmed 1, dropped 0');
    expect(text).toContain('  ASK             1 examples: over budget      1 (100.0%), trimmed 0, dropped 1');
    expect(text).toMatch(/rollout\.maxTokens 10: 1 of 3 fit \(33\.3%\)/); // 'x' + <|im_end|> = 2 tokens
  });
});

const dir = mkdtempSync(join(tmpdir(), 'gsteer-budget-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('gsteer sft build', () => {
  it('prints the examples over the budget per action, as an independent Qwen3 count finds them', async () => {
    const out = join(dir, 'ex.jsonl');
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const rc = await sftCommand([
      'build',
      '--config',
      'configs/demo.yaml',
      '--config',
      'configs/sft-demo.yaml',
      '--set',
      'sft.ordersPerSubgraph=2',
      '--set',
      'sft.maxSeqLen=700',
      '--set',
      'sft.overBudget=trim',
      '--set',
      'rollout.maxTokens=200',
      '--out',
      out,
    ]);
    const printed = log.mock.calls.map((c) => String(c[0])).join('\n');
    vi.restoreAllMocks();
    expect(rc).toBe(0);
    const over = new Map<string, number>();
    let turnsFit = 0;
    const examples = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { action: string; input: { role: 'system' | 'user'; content: string }[]; target: string });
    for (const ex of examples) {
      const n = tok.encode(renderChatML(ex.input, true)).length + tok.encode(ex.target).length + 1;
      if (n > 700) over.set(ex.action, (over.get(ex.action) ?? 0) + 1);
      if (tok.encode(ex.target).length + 1 <= 200) turnsFit++;
    }
    expect(over.get('STOP')).toBeGreaterThan(0);
    for (const action of ['ASK', 'RETRIEVE', 'STOP']) expect(printed).toMatch(new RegExp(`  ${action} +\\d+ examples: over budget +${over.get(action) ?? 0} `));
    expect(printed).toContain(`rollout.maxTokens 200: ${turnsFit} of ${examples.length} fit`);
  }, 60_000);
});

describe('completions/clipped_ratio', () => {
  it('is the share of turns cut at max_tokens (a cut turn ends its episode as truncated)', () => {
    const episodes = [
      { turns: 3, askCount: 1, retrieveCount: 1, termination: 'stop' as const, completionTokens: 30 },
      { turns: 2, askCount: 1, retrieveCount: 0, termination: 'invalid' as const, invalidReason: 'truncated' as const, completionTokens: 20 },
      { turns: 5, askCount: 4, retrieveCount: 0, termination: 'invalid' as const, invalidReason: 'bad_slot' as const, completionTokens: 50 },
    ];
    const g = {
      v: 1,
      groupId: 'g',
      step: 1,
      instanceId: 'i',
      userId: 'u',
      policyVersion: 0,
      snapshotId: 'u@0',
      dropped: false,
      trajPaths: ['a', 'b', 'c'],
      scores: episodes.map(() => ({ reward: 0, components: {} })),
      best: 0,
      episodes,
      applied: true,
    } as const;
    const result = {
      step: 1,
      policyVersion: 1,
      adapterPath: 'a',
      stats: { loss: 0, clip_ratio: 0, grad_norm: 0, entropy: 0, num_tokens: 1, train_seconds: 1 },
      groupsTrained: 1,
      advantageStats: {},
    };
    const rec = updateMetrics(1, [g as never], result as never, {
      wallSeconds: 1,
      rolloutSeconds: 1,
      policyVersionUsed: 0,
      waitRolloutsSeconds: 0,
      waitTrainerSeconds: 0,
    });
    expect(rec['completions/clipped_ratio']).toBeCloseTo(1 / 10, 12); // 1 cut turn of 3 + 2 + 5
  });
});
