// The synthetic parts (workers/parts.ts): an episode against the synthetic policy server
// through the real policy client and parser (episode.ts: one STOP turn, or a fleet
// simulation's turns with a simulator endpoint between them), a reward that counts
// "preferred" toy tokens, a Redis-backed user-state store, and the exact toy GRPO trainer.
import { createHash } from 'node:crypto';
import type { RunConfig } from '../../configs/schema.ts';
import type { Instance, UserState } from '../../data/schema.ts';
import { runCallSink } from '../../endpoints/index.ts';
import { bestIndex } from '../../checkpoints/group-file.ts';
import { runNamespace } from '../../checkpoints/run-keys.ts';
import { connect } from '../../util/redis.ts';
import type { Parts, RewardPart, Scored, TrainerPart, UserStatePart } from '../parts.ts';
import { episodeOptionsFromEnv, syntheticRolloutPart } from './episode.ts';
import { readOptimizer, readToyAdapter, writeOptimizer, writeToyAdapter, type AdamState } from './toy-adapter.ts';
import { TOY_VOCAB, toyIndex } from './toy-policy.ts';
import { freshAdam, toyGrpoStep } from './toy-trainer.ts';

/** FNV-1a of a string: stable per-instance choices (prompt ids, preferred tokens). */
export function fnv(s: string): number {
  let h = 0x811c9dc5;
  for (const ch of s) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  return h;
}

/** Reward = fraction of completion tokens in the instance's preferred quarter of the vocabulary. */
function rewardPart(cfg: RunConfig): RewardPart {
  return {
    async score(traj, instance): Promise<Scored> {
      const h = fnv(instance.id) % 4;
      const ids = traj.turns.flatMap((t) => t.tokens.completionIds);
      const preferred = ids.filter((id) => (toyIndex(id) + h) % 4 === 0).length / Math.max(1, ids.length);
      const invalid = traj.termination === 'invalid' ? cfg.reward.invalidPenalty : 0;
      return { reward: preferred - invalid, components: { coverage: preferred, penalty_invalid: invalid } };
    },
  };
}

/** User states as JSON in one Redis hash per run; a snapshot id is `userId@sha256(state)[:12]`. */
function usersPart(cfg: RunConfig, runId: string): UserStatePart {
  const redis = connect(cfg.queues.redisUrl);
  const key = `${runNamespace(cfg.queues.prefix, runId)}:synthetic-users`;
  const get = async (userId: string): Promise<UserState> => {
    const raw = await redis.hget(key, userId);
    return raw ? (JSON.parse(raw) as UserState) : { userId, profile: '', memories: [] };
  };
  return {
    async snapshot(userId) {
      const digest = createHash('sha256')
        .update(JSON.stringify(await get(userId)))
        .digest('hex');
      return `${userId}@${digest.slice(0, 12)}`;
    },
    // Every change appends one memory, so the count is the version.
    version: async (userId) => (await get(userId)).memories.length,
    async applyBest(group, instance) {
      const best = group[bestIndex(group.map((g) => ({ reward: g.reward, components: {} })))]!.trajectory;
      const s = await get(instance.userId);
      if (best.refinedQuery)
        s.memories.push({ name: `toy-${instance.id}`, purpose: 'synthetic memory', value: best.refinedQuery, sourceInstance: instance.id });
      await redis.hset(key, instance.userId, JSON.stringify(s));
    },
    async dump() {
      const all = await redis.hgetall(key);
      return Object.keys(all)
        .sort()
        .map((u) => JSON.parse(all[u] as string) as UserState);
    },
    async init(states) {
      await redis.del(key);
      for (const s of states) await redis.hset(key, s.userId, JSON.stringify(s));
    },
    async restore(records) {
      await redis.del(key);
      for (const r of records) await redis.hset(key, (r as UserState).userId, JSON.stringify(r));
    },
    async close() {
      redis.disconnect();
    },
  };
}

function trainerPart(cfg: RunConfig): TrainerPart {
  let theta: Float32Array = new Float32Array(TOY_VOCAB);
  let adam: AdamState = freshAdam();
  return {
    async init(initAdapter) {
      theta = initAdapter ? readToyAdapter(initAdapter) : new Float32Array(TOY_VOCAB);
      adam = freshAdam();
    },
    async load(dir) {
      theta = readToyAdapter(dir);
      adam = readOptimizer(dir);
    },
    async step(batch) {
      // Benchmarks and fault tests give the toy step a wall-clock cost (a real trainer's step time).
      const ms = Number(process.env.GSTEER_SYNTHETIC_TRAIN_MS ?? 0);
      if (ms > 0) await new Promise((r) => setTimeout(r, ms));
      return toyGrpoStep({ theta, adam, batch, cfg: cfg.grpo, temperature: cfg.rollout.temperature });
    },
    async save(dir) {
      writeToyAdapter(dir, theta, cfg);
      writeOptimizer(dir, adam);
    },
  };
}

/** `callsFile`: where the episode's LLM calls are recorded (RUN_DIR/llm_calls.jsonl), as the real parts do. */
export function syntheticParts(cfg: RunConfig, runId: string, callsFile?: string): Parts {
  return {
    kind: 'synthetic',
    rollout: async () => syntheticRolloutPart(cfg, episodeOptionsFromEnv(), callsFile ? runCallSink(callsFile) : undefined),
    reward: async () => rewardPart(cfg),
    users: async () => usersPart(cfg, runId),
    trainer: async () => trainerPart(cfg),
  };
}
