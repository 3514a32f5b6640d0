import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, parseSet } from '../../configs/load.ts';
import { InputError } from '../../util/errors.ts';

const tmp = mkdtempSync(join(tmpdir(), 'gsteer-config-'));
const file = (name: string, text: string) => {
  const p = join(tmp, name);
  writeFileSync(p, text);
  return p;
};

describe('run config', () => {
  it('defaults are the paper settings (method §4, §5)', () => {
    const c = loadConfig([]);
    expect(c.rollout.groupSize).toBe(4);
    expect(c.rollout.temperature).toBe(0.7);
    expect(c.rollout.topP).toBe(0.95);
    expect(c.reward).toMatchObject({
      alpha: 1,
      beta: 0.3,
      lambdaAsk: 0.04,
      lambdaRet: 0.01,
      lambdaRep: 0.08,
      lambdaMulti: 0.08,
      repetitionThreshold: 0.86,
      invalidPenalty: 1,
      nonStopPenalty: 0.2,
    });
    expect(c.grpo).toMatchObject({ epsilon: 0.2, betaKl: 0, learningRate: 1e-6, weightDecay: 0.01, passes: 2 });
    expect(c.lora).toMatchObject({ r: 8, alpha: 16, dropout: 0.05 });
    expect(c.lora.targetModules).toHaveLength(7);
    expect(c.seed).toBe(42);
  });

  it('merges files in order, then --set with typed values', () => {
    const a = file('a.yaml', 'rollout:\n  maxTurns: 6\ngrpo:\n  passes: 3\n');
    const b = file('b.yaml', 'rollout:\n  maxTurns: 8\n');
    const c = loadConfig([a, b], ['grpo.learningRate=1e-5', 'lora.targetModules=[q_proj, v_proj]']);
    expect(c.rollout.maxTurns).toBe(8);
    expect(c.grpo.passes).toBe(3);
    expect(c.grpo.learningRate).toBe(1e-5);
    expect(c.lora.targetModules).toEqual(['q_proj', 'v_proj']);
  });

  it('parseSet builds nested trees', () => {
    expect(parseSet('a.b.c=true')).toEqual({ a: { b: { c: true } } });
    expect(parseSet('runName=my-run')).toEqual({ runName: 'my-run' });
    expect(() => parseSet('noequals')).toThrow(/key=value/);
  });

  it('names the key, the value and the rule for unknown keys, wrong types and bad combinations', () => {
    const bad = file('bad.yaml', 'rollout:\n  groupSzie: 4\n  temperature: hot\ngrpo:\n  epsilon: 0.3\n  epsilonHigh: 0.1\n');
    let err: unknown;
    try {
      loadConfig([bad]);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InputError);
    const msg = (err as Error).message;
    expect(msg).toContain('unknown key "rollout.groupSzie"');
    expect(msg).toMatch(/rollout\.temperature = "hot"/);
    const cross = file('cross.yaml', 'grpo:\n  epsilon: 0.3\n  epsilonHigh: 0.1\npolicy:\n  server: external\n');
    expect(() => loadConfig([cross])).toThrow(/grpo\.epsilonHigh \(0\.1\) must be >= grpo\.epsilon \(0\.3\)/);
    expect(() => loadConfig([cross])).toThrow(/policy\.baseUrl is not set/);
  });

  it('the shipped paper.yaml resolves', () => {
    const c = loadConfig(['configs/paper.yaml']);
    expect(c.policy.server).toBe('external');
    expect(c.trainer.backend).toBe('gpu');
  });
});
