// The embedded, deterministic user simulator (SPEC §3) for tests and the demo. For a
// question it takes the active target (simulator.ts) whose "description + seed question"
// has the highest encoder cosine to the question (ties: the earlier target). If that
// cosine >= simulator.answerThreshold it answers with the target's seed answer verbatim
// (grounded by construction); otherwise it gives the fixed non-committal line, never a
// made-up preference. The persona is not used: without an LLM there is no faithful way to
// compose an answer from it, and the seed answers are already persona-grounded.
import type { Instance, Target } from '../data/schema.ts';
import { cosine, type Encoder } from '../reward/encoder.ts';
import { activeTargets, NON_COMMITTAL, type DialogueSoFar, type SimulatorAnswer, type UserSimulator } from './simulator.ts';

export function targetMatchText(t: Target): string {
  return `${t.description} ${t.seedQuestion}`;
}

export class SeedSimulator implements UserSimulator {
  // Target vectors per instance (instances are immutable during a run).
  private readonly cache = new Map<string, Map<string, Float32Array>>();

  constructor(private readonly encoder: Encoder, private readonly answerThreshold: number) {}

  private async targetVectors(instance: Instance): Promise<Map<string, Float32Array>> {
    let vecs = this.cache.get(instance.id);
    if (!vecs) {
      const embedded = await this.encoder.embed(instance.targets.map(targetMatchText));
      vecs = new Map(instance.targets.map((t, i) => [t.id, embedded[i] as Float32Array]));
      this.cache.set(instance.id, vecs);
    }
    return vecs;
  }

  async answer(question: string, instance: Instance, dialogue?: DialogueSoFar): Promise<SimulatorAnswer> {
    const active = activeTargets(instance, dialogue);
    if (!active.length || !question.trim()) return { answer: NON_COMMITTAL, targetId: null };
    const vecs = await this.targetVectors(instance);
    const [q] = await this.encoder.embed([question]);
    let best: Target | null = null;
    let bestScore = -Infinity;
    for (const t of active) {
      const s = cosine(q as Float32Array, vecs.get(t.id) as Float32Array);
      if (s > bestScore) [best, bestScore] = [t, s];
    }
    if (!best || bestScore < this.answerThreshold || !best.seedAnswer.trim()) return { answer: NON_COMMITTAL, targetId: null };
    return { answer: best.seedAnswer, targetId: best.id };
  }
}
