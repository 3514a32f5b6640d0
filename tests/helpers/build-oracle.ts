// A fake model for the LLM build steps: the embedded rules run once, recording for every
// prompt (the step's user message, data/build/prompts.ts) the JSON answer the rule gives,
// in the step's answer shape (data/build/schemas.ts). A fake vLLM answering from this map
// answers exactly what the rules computed, so an LLM build through the endpoint must write
// the same bytes as the rule build: a check of the whole request/reply/cache path.
import { buildDataset } from '../../data/build/pipeline.ts';
import { PROMPTS } from '../../data/build/prompts.ts';
import { ruleCandidates, ruleIeg, ruleProfile, ruleSeeds, ruleSlots, ruleValidate } from '../../data/build/rules.ts';
import type { Placement } from '../../data/build/split.ts';
import type { BuildSteps } from '../../data/build/steps.ts';
import type { RawDataset } from '../../data/raw/schema.ts';
import type { ChatMessage } from '../../endpoints/index.ts';
import type { FakeChatRequest } from './fake-vllm.ts';

export async function buildOracle(ds: RawDataset, placements: readonly Placement[]): Promise<Map<string, string>> {
  const map = new Map<string, string>();
  const rec = (msgs: ChatMessage[], answer: unknown) => map.set(msgs[1]!.content, JSON.stringify(answer));
  const steps: BuildSteps = {
    kind: 'rule',
    async candidates(inst) {
      const c = ruleCandidates(inst);
      rec(PROMPTS.candidates(inst), { candidates: c.map(({ description, criterion, rubricItems }) => ({ description, criterion, rubricItems })) });
      return c;
    },
    async validate(inst, cands, weights) {
      const d = ruleValidate(inst, cands, weights);
      rec(PROMPTS.validate(inst, cands, weights), { decisions: d });
      return d;
    },
    async seeds(inst, targets) {
      const s = ruleSeeds(inst, targets);
      rec(PROMPTS.seeds(inst, targets), { seeds: s });
      return s;
    },
    async ieg(inst, targets) {
      const g = ruleIeg(targets);
      rec(PROMPTS.ieg(inst, targets), g);
      return g;
    },
    async slots(inst, targets) {
      const s = ruleSlots(targets);
      rec(PROMPTS.slots(inst, targets), { slots: s });
      return s;
    },
    async profile(inst, current, others) {
      const p = ruleProfile(current, others);
      if (others.length) rec(PROMPTS.profile(inst, current, others), { summary: p });
      return p;
    },
  };
  await buildDataset(ds, placements, steps);
  return map;
}

export const stepOf = (req: FakeChatRequest) => req.response_format?.json_schema?.name ?? '';

/** The oracle's answer to a request (its first user message), or a JSON object no schema accepts. */
export function oracleAnswer(map: Map<string, string>, req: FakeChatRequest): string {
  const user = req.messages.find((m) => m.role === 'user')?.content ?? '';
  return map.get(user) ?? '{"unknown_prompt": true}';
}

/** A cyclic IEG over the first two target ids of an ieg prompt (a self-loop when there is one). */
export function cyclicIeg(req: FakeChatRequest): string {
  const user = req.messages.find((m) => m.role === 'user')?.content ?? '';
  const ids = [...user.matchAll(/^(c\d+)/gm)].map((m) => m[1] as string);
  const [a, b] = [ids[0] ?? 'c1', ids[1] ?? ids[0] ?? 'c1'];
  return JSON.stringify({
    edges: [
      { parent: a, child: b },
      { parent: b, child: a },
    ],
    lateActivatable: [],
  });
}
