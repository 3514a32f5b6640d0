// The QREF and PPO config fragments (configs/qref.ts, configs/ppo.ts): defaults as documented
// and the rules with their messages.
import { describe, expect, it } from 'vitest';
import { PpoSchema } from '../../configs/ppo.ts';
import { QrefSchema } from '../../configs/qref.ts';
import { RunConfigSchema } from '../../configs/schema.ts';

describe('PpoSchema', () => {
  it("defaults to the paper's PPO settings, verl's where the paper gives none", () => {
    expect(PpoSchema.parse({})).toEqual({
      actorLearningRate: 1e-6,
      criticLearningRate: 1e-5,
      batchSize: 64,
      rolloutsPerPrompt: 1,
      epochs: 1,
      ppoEpochs: 1,
      gamma: 1,
      gaeLambda: 1,
      whitenAdvantages: true,
      useKlInReward: true,
      klCoef: 0.001,
      klEstimator: 'k1',
      clipRatio: 0.2,
      cliprangeValue: 0.5,
      criticWarmup: 0,
    });
  });

  it('refuses unknown keys and out-of-range values', () => {
    expect(PpoSchema.safeParse({ lam: 0.9 }).success).toBe(false);
    expect(PpoSchema.safeParse({ gamma: 1.5 }).success).toBe(false);
    expect(PpoSchema.safeParse({ klEstimator: 'k2' }).success).toBe(false);
  });
});

describe('QrefSchema', () => {
  it('defaults: the demo data, BM25 top 10, 5 queries, query cost 0.1, the rule filter', () => {
    const c = QrefSchema.parse({});
    expect(c.data.corpus).toBe('data/qref/demo/corpus.jsonl');
    expect(c.search).toEqual({ kind: 'bm25', topK: 10, bm25: { k1: 1.2, b: 0.75, delta: 0 } });
    expect(c.turn).toEqual({ maxQueries: 5, maxQueryChars: 200, maxRationaleChars: 400 });
    expect(c.reward).toEqual({ queryCost: 0.1, invalidPenalty: 1 });
    expect(c.filter).toEqual({ kind: 'rule', minCoverage: 0.45 });
  });

  it('search.kind http needs search.http, with the rule and the fix in the message', () => {
    const r = QrefSchema.safeParse({ search: { kind: 'http' } });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]).toMatchObject({
      path: ['search', 'http'],
      message: expect.stringMatching(/qref\.search\.http is not set; set qref\.search\.http\.url/),
    });
    const ok = QrefSchema.parse({
      search: { kind: 'http', http: { url: 'https://google.serper.dev/search', method: 'POST', results: 'organic', id: 'link', text: 'snippet' } },
    });
    expect(ok.search.http).toMatchObject({ queryParam: 'q', timeoutMs: 10_000, apiKeyHeader: 'Authorization' });
  });
});

describe('the PPO schedule (ppo.epochs is read)', () => {
  it('makes one pass over the training prompts by default (the paper), ppo.epochs passes when set; GRPO keeps grpo.passes', async () => {
    const { RunConfigSchema, scheduleOf } = await import('../../configs/schema.ts');
    const { updateSchedule } = await import('../../workers/schedule.ts');
    const instances = Array.from({ length: 10 }, (_, i) => ({ id: `q${i}`, userId: 'u', split: 'train' }));
    const updates = (over: Record<string, unknown>) => updateSchedule(instances, scheduleOf(RunConfigSchema.parse(over)), 1).length;
    expect(updates({ algorithm: 'ppo', ppo: { batchSize: 4 } })).toBe(3); // ceil(1 x 10 / 4)
    expect(updates({ algorithm: 'ppo', ppo: { batchSize: 4, epochs: 2 } })).toBe(5); // ceil(2 x 10 / 4)
    expect(updates({ algorithm: 'grpo' })).toBe(20); // grpo.passes 2 x 10 groups of one
    // the paper's limits on prompt and response length are not keys: refused as unknown
    expect(RunConfigSchema.safeParse({ ppo: { maxResponseTokens: 2048 } }).success).toBe(false);
  });
});

describe('constrained refiner turns', () => {
  it('need rollout.maxTokens and eval.maxTokens of at least 25 (the shortest refiner turn and EOS)', () => {
    const r = RunConfigSchema.safeParse({ env: 'qref', rollout: { maxTokens: 24 }, eval: { maxTokens: 20 } });
    expect(r.success).toBe(false);
    expect(r.error?.issues.map((i) => i.path.join('.'))).toEqual(['rollout.maxTokens', 'eval.maxTokens']);
    expect(r.error?.issues[0]?.message).toMatch(
      /^rollout\.maxTokens \(24\) is below 25, the shortest refiner turn \(plus EOS\).*; raise it or set rollout\.constrained=false$/,
    );
    expect(r.error?.issues[1]?.message).toMatch(/^eval\.maxTokens \(20\) is below 25/);
    expect(RunConfigSchema.safeParse({ env: 'qref', rollout: { maxTokens: 25, constrained: true }, eval: { maxTokens: 25 } }).success).toBe(true);
    expect(RunConfigSchema.safeParse({ env: 'qref', rollout: { maxTokens: 24, constrained: false } }).success).toBe(true);
  });
});
