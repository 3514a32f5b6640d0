// G-STEER's clarification loop as an environment (method §3, §4, §6; the plugin interface is
// rollout/env/types.ts): multi-turn episodes of RETRIEVE / ASK / STOP against the user
// simulator and the Redis user-state store, the target-anchored reward, and the best-of-group
// online user-state update. The code is what workers/real-parts.ts ran before environments
// were plugins, moved here unchanged (the demo config gives the same rewards and adapter
// bytes: method §13). Modules load lazily so a process imports only what it runs.
import type { RunConfig } from '../../configs/schema.ts';
import type { Instance } from '../../data/schema.ts';
import { loadInstances } from '../../data/load.ts';
import { connect } from '../../util/redis.ts';
import { withCallGroup, type CallSink } from '../../endpoints/index.ts';
import { CLARIFIER_ACTIONS } from '../../structured/turn/menu-grammar.ts';
import type { Environment, EnvInstance, RewardPart, RolloutPart, UserStatePart } from './types.ts';
import { trajectoryView } from './view.ts';
import { GSTEER_GRAMMARS } from './grammars.ts';

async function encoderOf(cfg: RunConfig, sink?: CallSink) {
  return (await import('../../encoders/index.ts')).createEncoder(cfg.encoder, sink);
}

/** G-STEER's instances are data/schema.ts Instances (loaded by this environment's `load`). */
const asInstance = (i: EnvInstance) => i as Instance;

async function rolloutPart(cfg: RunConfig, runId: string, sink?: CallSink): Promise<RolloutPart> {
  const [{ runEpisode }, fc, { qwen3Tokenizer }] = await Promise.all([import('../episode.ts'), import('../from-config.ts'), import('../../core/tokenizer.ts')]);
  const encoder = await encoderOf(cfg, sink);
  const redis = connect(cfg.queues.redisUrl);
  const store = fc.userStoreFrom(cfg, redis, encoder, runId);
  const simulator = fc.simulatorFrom(cfg, encoder, sink);
  const tokenizer = qwen3Tokenizer();
  const clients = new Map<string, ReturnType<typeof fc.policyClientFrom>>();
  return {
    async run({ job, instance, policyUrl }) {
      let policy = clients.get(policyUrl);
      if (!policy) clients.set(policyUrl, (policy = fc.policyClientFrom(cfg, policyUrl, sink)));
      const deps = { policy, simulator, store, tokenizer };
      return await withCallGroup(job.groupId, () =>
        runEpisode(deps, asInstance(instance), {
          runId: job.runId,
          groupId: job.groupId,
          index: job.index,
          policyVersion: job.policyVersion,
          model: job.model,
          snapshotId: job.snapshotId,
          seed: job.seed,
          rollout: cfg.rollout,
          ...(cfg.variant === 'clarifier' ? { actions: CLARIFIER_ACTIONS } : {}), // the Ask/Stop clarifier (method §8.5)
        }),
      );
    },
    async close() {
      redis.disconnect();
    },
  };
}

/** The reward's numeric fields are its components (method §4: each reported separately). */
async function rewardPart(cfg: RunConfig, sink?: CallSink): Promise<RewardPart> {
  const { computeReward, rewardInputFromTrajectory } = await import('../../reward/index.ts');
  const encoder = await encoderOf(cfg, sink);
  return {
    async score(traj, instance) {
      // The clarifier's coverage comes from what its dialogue gathered (method §8.5).
      const evidence = cfg.variant === 'clarifier' ? 'dialogue' : 'state';
      const b = await withCallGroup(traj.groupId, () => computeReward(rewardInputFromTrajectory(traj, asInstance(instance), evidence), cfg.reward, encoder));
      const components: Record<string, number> = {};
      for (const [k, v] of Object.entries(b)) if (typeof v === 'number' && k !== 'reward') components[k] = v;
      return { reward: b.reward, components };
    },
  };
}

async function usersPart(cfg: RunConfig, runId: string, sink?: CallSink): Promise<UserStatePart> {
  const [fc, { updateUserState }, { snapshotId }] = await Promise.all([import('../from-config.ts'), import('../state-update.ts'), import('../user-store.ts')]);
  const encoder = await encoderOf(cfg, sink);
  const redis = connect(cfg.queues.redisUrl);
  const store = fc.userStoreFrom(cfg, redis, encoder, runId);
  const judge = fc.judgeFrom(cfg, encoder, sink);
  return {
    snapshot: async (userId) => snapshotId(userId, await store.latestVersion(userId)),
    version: (userId) => store.latestVersion(userId),
    async applyBest(group, instance) {
      const run = () => updateUserState({ store, judge }, asInstance(instance), group);
      await (group[0] ? withCallGroup(group[0].trajectory.groupId, run) : run());
    },
    async init(states) {
      await store.clear();
      await store.init(states);
    },
    dump: async () => (await store.dump()).users,
    restore: async (records) => store.restore({ format: 'gsteer-user-store', v: 1, users: records as never }),
    async close() {
      redis.disconnect();
    },
  };
}

/** `sink`: where every LLM call of the parts is recorded (RUN_DIR/llm_calls.jsonl, endpoints/call-group.ts). */
export function gsteerEnv(cfg: RunConfig, sink?: CallSink): Environment {
  return {
    name: 'gsteer',
    load: () => ({ instances: loadInstances(cfg.data.instances), warnings: [] }),
    rollout: (runId) => rolloutPart(cfg, runId, sink),
    reward: () => rewardPart(cfg, sink),
    users: (runId) => usersPart(cfg, runId, sink),
    view: (traj) => trajectoryView(traj),
    grammars: () => GSTEER_GRAMMARS,
  };
}
