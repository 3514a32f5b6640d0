// How many finished jobs each queue keeps (workers/flow.ts jobRetention): enough for every
// group of the updates the controller may not have read yet. Under PPO an update has
// ppo.batchSize groups of ppo.rolloutsPerPrompt rollouts, not grpo.groupsPerUpdate x
// rollout.groupSize (configs/qref-demo.yaml lost its group jobs at update 1 when it was).
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../configs/load.ts';
import { jobRetention } from '../../workers/flow.ts';

const kept = (o: ReturnType<typeof jobRetention>['groups']) => (o.removeOnComplete as { count: number }).count;

describe('jobRetention', () => {
  it('GRPO: (maxPolicyLag + 3) updates of grpo.groupsPerUpdate groups of rollout.groupSize', () => {
    const r = jobRetention(loadConfig([], ['grpo.maxPolicyLag=1', 'grpo.groupsPerUpdate=2', 'rollout.groupSize=5']));
    expect([kept(r.updates), kept(r.groups), kept(r.rollouts)]).toEqual([4, 8, 40]);
  });
  it('PPO: (maxPolicyLag + 3) updates of ppo.batchSize groups of ppo.rolloutsPerPrompt', () => {
    const r = jobRetention(loadConfig([], ['algorithm=ppo', 'grpo.maxPolicyLag=0', 'grpo.groupsPerUpdate=1', 'ppo.batchSize=8', 'ppo.rolloutsPerPrompt=2']));
    expect([kept(r.updates), kept(r.groups), kept(r.rollouts)]).toEqual([3, 24, 48]);
  });
});
