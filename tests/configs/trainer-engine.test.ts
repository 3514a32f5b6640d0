// trainer.engine (method §5.13): the default is gsteer's embedded service; a remote Tinker engine
// needs its URL and base model, and refuses what the contract cannot carry (PPO's critic, the KL's
// reference logprobs, gsteer serve as its sampler), each with the rule and the fix; paper-tinker.yaml resolves.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../configs/load.ts';
import { RunConfigSchema } from '../../configs/schema.ts';

const issues = (raw: unknown) => {
  const r = RunConfigSchema.safeParse(raw);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};
const remote = { engine: 'tinker', baseUrl: 'https://tinker.example/services/x', baseModel: 'Qwen/Qwen3-8B' };
const external = { server: 'external', baseUrl: 'http://127.0.0.1:8000/v1' };

describe('trainer.engine', () => {
  it('defaults to the embedded service with the stale-adapter check on 2 turns per update', () => {
    expect(RunConfigSchema.parse({}).trainer).toMatchObject({ engine: 'embedded', port: 0, apiKeyEnv: 'TINKER_API_KEY', samplerCheck: { turns: 2, every: 1 } });
  });

  it('tinker needs trainer.baseUrl and trainer.baseModel', () => {
    expect(issues({ trainer: { engine: 'tinker' }, policy: external })).toEqual([
      expect.stringMatching(
        /^trainer\.baseUrl: trainer\.engine is "tinker" but trainer\.baseUrl is not set; set it to the engine's URL or use trainer\.engine=embedded/,
      ),
      expect.stringMatching(/^trainer\.baseModel: .* set the engine's name of the base \(e\.g\. Qwen\/Qwen3-8B\)/),
    ]);
    expect(issues({ trainer: remote, policy: external })).toEqual([]);
  });

  it('tinker refuses PPO (no critic in the contract), betaKl > 0 (reference logprobs) and gsteer serve as its sampler', () => {
    expect(issues({ trainer: remote, policy: external, algorithm: 'ppo' })).toEqual([
      expect.stringMatching(
        /^algorithm: algorithm ppo needs a critic .* Use algorithm=grpo with trainer\.engine=tinker, or trainer\.engine=embedded \(PPO trains in process\)/,
      ),
    ]);
    expect(issues({ trainer: remote, policy: external, grpo: { betaKl: 0.04 } })).toEqual([
      expect.stringMatching(/^grpo\.betaKl: grpo\.betaKl \(0\.04\) needs the reference model's logprobs/),
    ]);
    expect(issues({ trainer: remote })).toEqual([
      expect.stringMatching(/^policy\.server: .*gsteer serve cannot load a remote engine's sampler weights; set policy\.server=external/),
    ]);
    // the embedded engine keeps PPO's critic and the KL
    expect(issues({ algorithm: 'ppo', env: 'qref' })).toEqual([]);
    expect(issues({ grpo: { betaKl: 0.04 } })).toEqual([]);
  });

  it('configs/paper.yaml + configs/paper-tinker.yaml: the paper on hosted Tinker', () => {
    const c = loadConfig(['configs/paper.yaml', 'configs/paper-tinker.yaml']);
    expect(c.trainer).toMatchObject({ engine: 'tinker', baseModel: 'Qwen/Qwen3-8B', apiKeyEnv: 'TINKER_API_KEY' });
    expect(c.policy).toMatchObject({ server: 'external', apiKeyEnv: 'TINKER_API_KEY' });
    expect(c.grpo).toMatchObject({ learningRate: 1e-6, epsilon: 0.2, betaKl: 0, maxPolicyLag: 0, lossAggregation: 'trajectory' });
    expect(c.lora).toMatchObject({ r: 8, alpha: 16, dropout: 0 });
    expect(c.rollout.constrained).toBe(false);
  });
});
