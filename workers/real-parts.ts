// The real parts behind workers/parts.ts: the configured environment's episodes, reward and
// user state (rollout/env/: G-STEER or QREF, method §13), and the trainer (trainer/update/: the
// LoRA step in process, or through the Tinker contract). Modules load lazily so a rollout worker
// never imports tfjs.
import { scheduleOf, type RunConfig } from '../configs/schema.ts';
import { environmentOf } from '../rollout/env/index.ts';
import { runCallSink } from '../endpoints/index.ts';
import type { Parts } from './parts.ts';
import { runLayout } from '../checkpoints/layout.ts';

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
    trainer: async (ctx) => {
      const n = await total();
      // method §13: PPO's actor + critic (in process: the contract has no critic), or GRPO's LoRA step
      if (cfg.algorithm === 'ppo') return (await import('../trainer/update/ppo-part.ts')).ppoTrainerPart(cfg, env.grammars());
      if (cfg.trainer.engine === 'inprocess') return (await import('../trainer/update/step-part.ts')).stepTrainerPart(cfg, () => n, env.grammars());
      // method §5.13: through the Tinker contract, to gsteer's service or a remote engine
      const embedded = cfg.trainer.engine === 'embedded';
      const baseUrl = embedded ? ctx?.trainerUrl : cfg.trainer.baseUrl;
      if (!ctx || !baseUrl)
        throw new Error(
          `internal: trainer.engine ${cfg.trainer.engine} without ${embedded ? "the trainer service's URL (gsteer train starts it)" : 'trainer.baseUrl'}`,
        );
      const layout = runLayout(ctx.runDir);
      return (await import('../trainer/update/contract-part.ts')).contractTrainerPart({
        cfg,
        runId,
        totalSteps: () => n,
        baseUrl,
        baseModel: embedded ? cfg.policy.model : cfg.trainer.baseModel!,
        embedded: embedded ? { stateDir: layout.trainerService } : null,
        callsFile: layout.trainerCalls,
        versionDir: (v) => layout.adapter(v),
        log: ctx.log,
      });
    },
  };
}
