// Episodes of a released-checkpoint baseline (method §8.5): the shared environment's simulator
// answers its questions (no memory, no profile: Table 7's "None"), at most rollout.maxTurns turns,
// and the same trajectory record as every method, so scoring, `gsteer eval compare` and
// downstream evaluation read it unchanged: each turn keeps the model's raw output
// (completionText) and its mapping (parsed: an empty STATE, the thought as PLAN, Ask / Stop and
// the question or q*); no token ids (it is not trained). A turn the agent could not map is
// invalid (`missing_section`); the budget spent on a question ends it as max_turns (no q*).
import { endpointOptions } from '../../configs/endpoints.ts';
import type { RunConfig } from '../../configs/schema.ts';
import type { Instance } from '../../data/schema.ts';
import { createEndpoint, type CallSink } from '../../endpoints/index.ts';
import type { UserSimulator } from '../../rollout/simulator.ts';
import type { Termination, Trajectory, TurnRecord } from '../../core/types.ts';
import { InputError } from '../../util/errors.ts';
import { progressBar } from '../../util/progress.ts';
import type { DialogueTurn, ExternalAgent } from './agent.ts';
import { CepAgent } from './cep.ts';
import { MistralInteractAgent } from './mistral-interact.ts';

export type ExternalName = 'mistral_interact' | 'cep';

const tokens = { promptIds: [], completionIds: [], logprobs: [] };

export async function runExternalEpisode(
  agent: ExternalAgent,
  simulator: UserSimulator,
  instance: Instance,
  o: { runId: string; index: number; maxTurns: number; seed: number },
): Promise<Trajectory> {
  const dialogue: DialogueTurn[] = [];
  const asked: (string | null)[] = []; // the simulator's grounding of each answer (what late activation reads)
  const turns: TurnRecord[] = [];
  let termination: Termination = 'max_turns';
  let refinedQuery: string | null = null;
  let invalidDetail: string | null = null;
  for (let t = 1; t <= o.maxTurns; t++) {
    const turn = await agent.turn(instance.query, dialogue, t === o.maxTurns, o.seed + 97 * t);
    if (turn.action === 'INVALID') {
      turns.push({
        index: t - 1,
        tokens,
        completionText: turn.raw,
        parsed: { ok: false, reason: 'missing_section', detail: turn.detail },
        observation: { kind: 'none' },
      });
      [termination, invalidDetail] = ['invalid', turn.detail];
      break;
    }
    const parsed = { ok: true as const, turn: { state: [], plan: turn.thought || '-', action: turn.action, execute: turn.execute } };
    if (turn.action === 'STOP') {
      turns.push({ index: t - 1, tokens, completionText: turn.raw, parsed, observation: { kind: 'none' } });
      [termination, refinedQuery] = ['stop', turn.execute];
      break;
    }
    const a = await simulator.answer(turn.execute, instance, {
      turns: dialogue.map((d, i) => ({ question: d.question, answer: d.answer, targetId: asked[i] ?? null })),
    });
    asked.push(a.targetId);
    turns.push({
      index: t - 1,
      tokens,
      completionText: turn.raw,
      parsed,
      observation: { kind: 'answer', question: turn.execute, answer: a.answer, targetId: a.targetId },
    });
    dialogue.push({ question: turn.execute, answer: a.answer, raw: turn.raw });
  }
  return {
    version: 1,
    runId: o.runId,
    instanceId: instance.id,
    userId: instance.userId,
    groupId: `eval-${instance.id}`,
    index: o.index,
    policyVersion: 0,
    snapshotId: `${instance.userId}@0`,
    turns,
    finalSlots: [],
    askedQuestions: dialogue.map((d) => d.question),
    retrieveCount: 0,
    askCount: dialogue.length,
    termination,
    ...(invalidDetail !== null ? { invalidReason: 'missing_section' as const } : {}),
    refinedQuery,
  };
}

/** The agent a baseline names, from eval.baselines (configs/baselines.ts); `policyBaseUrl` serves CEP's rewriter by default. */
export function externalAgentFrom(cfg: RunConfig, name: ExternalName, sink?: CallSink): ExternalAgent {
  const deps = sink ? { sink } : {};
  const need = (key: string, v: string | undefined) => {
    if (!v)
      throw new InputError(
        `--baseline ${name}: ${key} is not set; point it at the OpenAI-compatible server (vLLM) that serves the released checkpoint, e.g. --set ${key}=http://127.0.0.1:8002/v1`,
      );
    return v;
  };
  if (name === 'mistral_interact') {
    const c = cfg.eval.baselines.mistralInteract;
    const ep = createEndpoint(endpointOptions('baseline', { ...c, chatTemplateKwargs: null }, need('eval.baselines.mistralInteract.baseUrl', c.baseUrl)), deps);
    return new MistralInteractAgent(c, ep);
  }
  const c = cfg.eval.baselines.cep;
  const consultant = createEndpoint(endpointOptions('baseline', { ...c, chatTemplateKwargs: null }, need('eval.baselines.cep.baseUrl', c.baseUrl)), deps);
  const r = c.rewriter;
  const rewriter = createEndpoint(
    endpointOptions('rewriter', r, need('eval.baselines.cep.rewriter.baseUrl (or policy.baseUrl)', r.baseUrl ?? cfg.policy.baseUrl)),
    deps,
  );
  return new CepAgent(c, consultant, rewriter);
}

/** `episodesPerInstance` episodes per instance, bounded concurrency, instance-major (as eval/run.ts). */
export async function runExternalEpisodes(
  agent: ExternalAgent,
  simulator: UserSimulator,
  instances: readonly Instance[],
  o: { runId: string; maxTurns: number; concurrency: number; episodesPerInstance: number; seedOf: (id: string, e: number) => number },
): Promise<Trajectory[]> {
  const jobs = instances.flatMap((inst) => Array.from({ length: o.episodesPerInstance }, (_, e) => ({ inst, e })));
  const out = new Array<Trajectory>(jobs.length);
  const bar = progressBar(`eval episodes (${agent.label})`, jobs.length);
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const k = next++;
      const { inst, e } = jobs[k] as (typeof jobs)[number];
      out[k] = await runExternalEpisode(agent, simulator, inst, { runId: o.runId, index: e, maxTurns: o.maxTurns, seed: o.seedOf(inst.id, e) });
      bar.tick(1, out[k].termination);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(o.concurrency, jobs.length)) }, worker));
  bar.done();
  return out;
}
