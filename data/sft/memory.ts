// Offline SFT memory (method §7; paper "User State Construction", "Offline SFT state"). Every
// target of every training instance is canonicalized into a slot-level memory
// {name = target id, purpose = description, value = seed answer} of its user. A scenario
// decides which targets are memory hits; a Retrieve then returns those targets' memories
// and fills the remaining result slots with the SAME user's most similar memories from
// OTHER instances (the retriever examines 15 candidates and returns at most 3, method §2).
// A non-hit target of the current instance never shows up.
import type { Instance, Memory, Target } from '../schema.ts';
import { cosine, type Encoder } from '../../core/encoder.ts';

export interface MemoryHit {
  name: string;
  purpose: string;
  value: string;
  score: number;
}

/**
 * The canonical slot of a target (paper: "canonicalized into a slot name, purpose, and
 * value"): the `slot` that `gsteer data build` writes, else the target id and description
 * (hand-written datasets such as data/demo name their targets readably).
 */
export function slotOf(t: Target): { name: string; purpose: string } {
  return t.slot ?? { name: t.id, purpose: t.description };
}

/** The canonical memory of one target. */
export function targetMemory(instance: Instance, t: Target): Memory {
  return { ...slotOf(t), value: t.seedAnswer, sourceInstance: instance.id };
}

/** The profile an SFT step shows: the offline profile summary when built (paper "Offline SFT state"), else the static profile. */
export const sftProfile = (instance: Instance): string => instance.offlineProfile ?? instance.profile;

/** The text a memory is embedded by (what a query is matched against). */
export const memoryText = (m: Memory) => `${m.name} ${m.purpose} ${m.value}`;

interface Entry {
  memory: Memory;
  vec: Float32Array;
}

export class OfflineMemory {
  private constructor(
    private readonly byUser: Map<string, Entry[]>,
    private readonly encoder: Encoder,
    readonly candidates: number,
    readonly topK: number,
  ) {}

  /** Index every target of `instances` (the training split) per user. */
  static async build(instances: readonly Instance[], encoder: Encoder, candidates = 15, topK = 3): Promise<OfflineMemory> {
    const memories = instances.flatMap((inst) => inst.targets.map((t) => ({ userId: inst.userId, memory: targetMemory(inst, t) })));
    const vecs = await encoder.embed(memories.map((m) => memoryText(m.memory)));
    const byUser = new Map<string, Entry[]>();
    memories.forEach(({ userId, memory }, i) => {
      byUser.set(userId, [...(byUser.get(userId) ?? []), { memory, vec: vecs[i] as Float32Array }]);
    });
    return new OfflineMemory(byUser, encoder, candidates, topK);
  }

  /**
   * The results of one Retrieve in instance `instance`: the memories of `hits` (targets of
   * this instance the scenario puts in memory; at most topK) then the best other-instance
   * memories, highest cosine first among `candidates` examined, topK in all.
   */
  async retrieve(instance: Instance, query: string, hits: readonly Target[]): Promise<MemoryHit[]> {
    const [q] = await this.encoder.embed([query]);
    const qv = q as Float32Array;
    const mine = hits.slice(0, this.topK).map((t) => targetMemory(instance, t));
    const mineVecs = mine.length ? await this.encoder.embed(mine.map(memoryText)) : [];
    const result: MemoryHit[] = mine.map((m, i) => ({ name: m.name, purpose: m.purpose, value: m.value, score: cosine(qv, mineVecs[i] as Float32Array) }));
    const others = (this.byUser.get(instance.userId) ?? [])
      .filter((e) => e.memory.sourceInstance !== instance.id)
      .map((e) => ({ e, score: cosine(qv, e.vec) }))
      .sort((a, b) => b.score - a.score)
      .slice(0, this.candidates);
    for (const { e, score } of others) {
      if (result.length >= this.topK) break;
      result.push({ name: e.memory.name, purpose: e.memory.purpose, value: e.memory.value, score });
    }
    return result;
  }
}
