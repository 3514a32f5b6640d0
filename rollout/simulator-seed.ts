// The embedded, deterministic user simulator (method §3) for tests and the demo. For a
// question it takes the active target (simulator.ts: late targets once a parent is covered in
// the dialogue or by a retrieved memory) whose "description + seed question"
// has the highest encoder cosine to the question (ties: the earlier target). If that
// cosine >= simulator.answerThreshold it answers with the target's seed answer verbatim
// (grounded by construction). Otherwise the persona may answer: the persona fact
// (data/persona.ts personaLines: one list item, one line of text, or one `key: value`
// attribute) with the highest cosine, verbatim, when it clears the same threshold; it is
// grounded in no target (targetId null). Else the fixed non-committal line, never a
// made-up preference.
import { personaLines } from '../data/persona.ts';
import type { Instance, Target } from '../data/schema.ts';
import { cosine, type Encoder } from '../core/encoder.ts';
import { LateActivation, NON_COMMITTAL, type DialogueSoFar, type SimulatorAnswer, type UserSimulator } from './simulator.ts';

export function targetMatchText(t: Target): string {
  return `${t.description} ${t.seedQuestion}`;
}

interface InstanceVectors {
  targets: Map<string, Float32Array>;
  facts: { text: string; vec: Float32Array }[];
}

/** The highest-cosine candidate (ties: the earlier one) and its cosine. */
function best<T>(q: Float32Array, items: readonly T[], vec: (x: T) => Float32Array): { item: T | null; score: number } {
  let out: { item: T | null; score: number } = { item: null, score: -Infinity };
  for (const x of items) {
    const s = cosine(q, vec(x));
    if (s > out.score) out = { item: x, score: s };
  }
  return out;
}

export class SeedSimulator implements UserSimulator {
  // Target and persona-fact vectors per instance (instances are immutable during a run).
  private readonly cache = new Map<string, InstanceVectors>();

  private readonly activation: LateActivation;

  /** `memoryThreshold`: the cosine at which a retrieved memory covers a target (late activation, simulator.ts). */
  constructor(
    private readonly encoder: Encoder,
    private readonly answerThreshold: number,
    memoryThreshold = 0.55,
  ) {
    this.activation = new LateActivation(encoder, memoryThreshold);
  }

  private async vectors(instance: Instance): Promise<InstanceVectors> {
    let vecs = this.cache.get(instance.id);
    if (!vecs) {
      const facts = personaLines(instance.persona);
      const embedded = await this.encoder.embed([...instance.targets.map(targetMatchText), ...facts]);
      const targets = new Map(instance.targets.map((t, i) => [t.id, embedded[i] as Float32Array]));
      vecs = { targets, facts: facts.map((text, i) => ({ text, vec: embedded[instance.targets.length + i] as Float32Array })) };
      this.cache.set(instance.id, vecs);
    }
    return vecs;
  }

  async answer(question: string, instance: Instance, dialogue?: DialogueSoFar): Promise<SimulatorAnswer> {
    if (!question.trim()) return { answer: NON_COMMITTAL, targetId: null };
    const vecs = await this.vectors(instance);
    const [q] = (await this.encoder.embed([question])) as [Float32Array];
    const target = best(q, await this.activation.active(instance, dialogue), (t) => vecs.targets.get(t.id) as Float32Array);
    if (target.item && target.score >= this.answerThreshold && target.item.seedAnswer.trim())
      return { answer: target.item.seedAnswer, targetId: target.item.id };
    const fact = best(q, vecs.facts, (f) => f.vec);
    if (fact.item && fact.score >= this.answerThreshold) return { answer: fact.item.text, targetId: null };
    return { answer: NON_COMMITTAL, targetId: null };
  }
}
