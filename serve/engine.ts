// Turns a validated request into finished choices: picks the adapter, checks the context
// length, seeds each choice, and hands the generations to the scheduler.
import { randomInt } from 'node:crypto';
import type { Tokenizer } from '../core/tokenizer.ts';
import type { AdapterRegistry } from './adapters.ts';
import { badRequest } from './errors.ts';
import { Generation, type ChoiceResult, type StepEvent } from './generation.ts';
import type { ServeModel } from './model.ts';
import type { GenerateParams } from './requests.ts';
import type { GenScheduler } from './scheduler.ts';
import type { CompiledConstraint } from '../structured/compile.ts';

export interface Engine {
  model: ServeModel;
  tok: Tokenizer;
  adapters: AdapterRegistry;
  scheduler: GenScheduler;
}

export interface GenerateJob {
  params: GenerateParams;
  /** Prompt ids, one entry per prompt of the batch. */
  prompts: number[][];
  topLogprobs: number;
  /** max_tokens when the request gives none: a number, or 'rest' = up to the context end. */
  defaultMaxTokens: number | 'rest';
  /** The compiled structured-outputs constraint (routes.ts compiles it before anything runs). */
  constraint: CompiledConstraint | null;
}

/** vLLM's message, with the fix. */
function checkContext(promptLen: number, maxTokens: number, maxContext: number): void {
  if (promptLen === 0) throw badRequest('prompt is empty; send at least one token', 'prompt');
  if (promptLen + maxTokens > maxContext)
    throw badRequest(
      `This model's maximum context length is ${maxContext} tokens. However, you requested ${promptLen + maxTokens} tokens ` +
        `(${promptLen} in the prompt, ${maxTokens} in the completion). Please reduce the prompt or max_tokens.`,
      'max_tokens',
    );
}

export interface Prepared {
  /** Runs the choices to the end; OpenAI order: prompt 0 choices 0..n-1, prompt 1 n..2n-1, ... */
  run(signal?: AbortSignal): Promise<ChoiceResult[]>;
}

/**
 * Checks the request against the model (404 unknown model, 400 beyond the context) before
 * anything is sent, so a streamed response never starts for a request that cannot run.
 * `onStep(choiceIndex, ev)` sees every decode step (streaming).
 */
export function prepare(engine: Engine, job: GenerateJob, onStep?: (index: number, ev: StepEvent) => void): Prepared {
  const { params } = job;
  const max = engine.model.maxContext;
  const maxTokensFor = (len: number) => params.maxTokens ?? (job.defaultMaxTokens === 'rest' ? Math.max(1, max - len) : job.defaultMaxTokens);
  const lease = engine.adapters.acquire(params.model); // 404 for an unknown model comes first
  try {
    for (const p of job.prompts) checkContext(p.length, maxTokensFor(p.length), max);
  } catch (e) {
    lease.release();
    throw e;
  }
  // Without a seed each request draws one; with it, choice i always uses Rng(seed, i).
  const seed = params.seed ?? randomInt(2 ** 31);
  const gens = job.prompts.flatMap((promptIds, p) =>
    Array.from({ length: params.n }, (_, i) => {
      const spec = {
        promptIds,
        maxTokens: maxTokensFor(promptIds.length),
        sampling: params.sampling,
        seed,
        choiceIndex: p * params.n + i,
        stop: params.stop,
        stopTokenIds: params.stopTokenIds,
        ignoreEos: params.ignoreEos,
        topLogprobs: job.topLogprobs,
        constraint: job.constraint,
      };
      const listener = onStep && ((ev: StepEvent) => onStep(spec.choiceIndex, ev));
      return new Generation(engine.model, lease.adapter, engine.tok, spec, listener);
    }),
  );
  return {
    async run(signal) {
      // allSettled: the adapter lease must outlive every choice, also when one of them fails.
      const settled = await Promise.allSettled(gens.map((g) => engine.scheduler.submit(g, signal)));
      lease.release();
      const failed = settled.find((s) => s.status === 'rejected');
      if (failed) throw failed.reason;
      return settled.map((s) => (s as PromiseFulfilledResult<ChoiceResult>).value);
    },
  };
}

export function generate(engine: Engine, job: GenerateJob, signal?: AbortSignal): Promise<ChoiceResult[]> {
  return prepare(engine, job).run(signal);
}
