// The build steps behind one interface, two implementations: the embedded rules (rules.ts)
// and an LLM over any OpenAI-compatible endpoint (prompts.ts + schemas.ts through
// endpoints/ chatJson: response_format json_schema, a refused reply retried with the error
// fed back, 429/5xx retried with backoff, a concurrency cap, and the request cache).
import type { Endpoint } from '../../endpoints/index.ts';
import { PROMPTS, type StepName } from './prompts.ts';
import { ruleCandidates, ruleIeg, ruleProfile, ruleSeeds, ruleSlots, ruleValidate, type ProfileSource } from './rules.ts';
import { candidatesSchema, iegSchema, profileSchema, seedsSchema, slotsSchema, validateSchema } from './schemas.ts';
import type { BuiltTarget, Candidate, Decision, Ieg, RawInstance, Seed, Slot } from './types.ts';

export interface BuildSteps {
  readonly kind: 'rule' | 'llm';
  candidates(inst: RawInstance): Promise<Candidate[]>;
  validate(inst: RawInstance, cands: readonly Candidate[], weights: ReadonlyMap<string, number>): Promise<Decision[]>;
  seeds(inst: RawInstance, targets: readonly BuiltTarget[]): Promise<Seed[]>;
  ieg(inst: RawInstance, targets: readonly BuiltTarget[]): Promise<Ieg>;
  slots(inst: RawInstance, targets: readonly BuiltTarget[]): Promise<Slot[]>;
  profile(inst: RawInstance, current: readonly BuiltTarget[], others: readonly ProfileSource[]): Promise<string>;
}

export const ruleSteps: BuildSteps = {
  kind: 'rule',
  candidates: async (inst) => ruleCandidates(inst),
  validate: async (inst, cands, weights) => ruleValidate(inst, cands, weights),
  seeds: async (inst, targets) => ruleSeeds(inst, targets),
  ieg: async (_inst, targets) => ruleIeg(targets),
  slots: async (_inst, targets) => ruleSlots(targets),
  profile: async (_inst, current, others) => ruleProfile(current, others),
};

export interface LlmStepOptions {
  temperature?: number;
  maxTokens?: number;
  seed?: number;
}

/** The step a failed call belonged to (for the build report). */
export class StepError extends Error {
  constructor(
    readonly step: StepName,
    override readonly cause: Error,
  ) {
    super(`${step}: ${cause.message}`);
  }
}

export function llmSteps(ep: Endpoint, o: LlmStepOptions = {}): BuildSteps {
  const req = { temperature: o.temperature ?? 0, maxTokens: o.maxTokens ?? 2048, seed: o.seed ?? 0 };
  const call = async <T>(step: StepName, messages: ReturnType<(typeof PROMPTS)['candidates']>, schema: import('zod').ZodType<T>): Promise<T> => {
    try {
      return (await ep.chatJson({ ...req, messages }, { name: `gsteer_${step}`, schema, feedback: true })).value;
    } catch (e) {
      throw new StepError(step, e as Error);
    }
  };
  return {
    kind: 'llm',
    async candidates(inst) {
      const v = await call('candidates', PROMPTS.candidates(inst), candidatesSchema(inst.rubric.length));
      return v.candidates.map((c, i) => ({ id: `c${i + 1}`, ...c }));
    },
    async validate(inst, cands, weights) {
      const v = await call('validate', PROMPTS.validate(inst, cands, weights), validateSchema(cands));
      const byId = new Map(v.decisions.map((d) => [d.id, d]));
      return cands.map((c) => byId.get(c.id) as Decision);
    },
    async seeds(inst, targets) {
      return (await call('seeds', PROMPTS.seeds(inst, targets), seedsSchema(targets))).seeds;
    },
    async ieg(inst, targets) {
      return call('ieg', PROMPTS.ieg(inst, targets), iegSchema(targets.map((t) => t.id)));
    },
    async slots(inst, targets) {
      return (await call('slots', PROMPTS.slots(inst, targets), slotsSchema(targets.map((t) => t.id)))).slots;
    },
    async profile(inst, current, others) {
      if (others.length === 0) return ''; // nothing to summarize: no call
      return (await call('profile', PROMPTS.profile(inst, current, others), profileSchema(current.map((t) => t.seedAnswer)))).summary.trim();
    },
  };
}
