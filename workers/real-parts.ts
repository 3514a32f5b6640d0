// The real parts behind workers/parts.ts: the configured environment's episodes, reward and
// user state (rollout/env/: G-STEER or QREF, method §13), and the trainer (trainer/update/: the
// LoRA step in process, or through the Tinker contract). Modules load lazily so a rollout worker
// never imports tfjs.
import { scheduleOf, type RunConfig } from '../configs/schema.ts';
import { environmentOf } from '../rollout/env/index.ts';
import { runCallSink } from '../endpoints/index.ts';
import type { Parts } from './parts.ts';

/** `callsFile`: RUN_DIR/llm_calls.jsonl, where every LLM call of these parts is recorded (endpoints/call-group.ts). */
export async function realParts(cfg: RunConfig, runId: string, callsFile?: string): Promise<Parts> {
  const total = async () => {
    const { updateSchedule } = await import('./schedule.ts');
    return updateSchedule(env.load().instances, scheduleOf(cfg), cfg.seed).length; // the controller's plan
  };
  const env = await environmentOf(cfg, callsFile ? runCallSink(callsFile) : undefined); // method §13: the task's episode, reward and user state
  return {
    kind: 'real',
    rollout: () => env.rollout(runId),
    reward: () => env.reward(),
    users: () => env.users(runId),
    trainer: async () => {
      const n = await total();
      // method §13: PPO's actor + critic, or GRPO's LoRA step
      if (cfg.algorithm === 'ppo') return (await import('../trainer/update/ppo-part.ts')).ppoTrainerPart(cfg);
      return (await import('../trainer/update/step-part.ts')).stepTrainerPart(cfg, () => n);
    },
  };
}
