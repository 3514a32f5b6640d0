// The builder over the shipped demo dataset: every trajectory obeys the method §7 rules
// (independent checker in check.ts), the counts are stable for a seed, and every target
// parses as a valid turn.
import { describe, it, expect, beforeAll } from 'vitest';
import { loadInstances } from '../../data/load.ts';
import type { Instance } from '../../data/schema.ts';
import { HashedEncoder } from '../../encoders/hashed.ts';
import { OfflineMemory } from '../../data/sft/memory.ts';
import { buildInstance, type SftTrajectory } from '../../data/sft/build.ts';
import { trajectoryExamples } from '../../rollout/sft-examples.ts';
import { parseTurn } from '../../structured/turn/grammar.ts';
import { violations } from './check.ts';

const MAX_TURNS = 12;
let train: Instance[];
let built: { inst: Instance; ts: SftTrajectory[] }[];

beforeAll(async () => {
  train = loadInstances(['data/demo/instances.jsonl']).filter((i) => i.split === 'train');
  const memory = await OfflineMemory.build(train, new HashedEncoder(512));
  built = [];
  for (const inst of train)
    built.push({ inst, ts: await buildInstance(inst, { seed: 42, optionalRatios: [0, 0.5, 1], ordersPerSubgraph: 2, maxTurns: MAX_TURNS, topK: 3, memory }) });
});

describe('SFT builder on data/demo', () => {
  it('every trajectory of every training instance obeys the rules', () => {
    expect(train.length).toBeGreaterThan(0);
    for (const { inst, ts } of built) {
      expect(ts.length).toBeGreaterThan(0);
      const sharedIds = new Set(train.filter((o) => o.userId === inst.userId && o.id !== inst.id).flatMap((o) => o.targets.map((t) => t.id)));
      for (const t of ts) expect(violations(inst, t, { maxTurns: MAX_TURNS, topK: 3, sharedIds })).toEqual([]);
    }
  });

  it('covers every scenario kind, late activation and every action', () => {
    const all = built.flatMap((b) => b.ts);
    expect(new Set(all.map((t) => t.scenario.kind))).toEqual(new Set(['dialogue', 'memory_mixed', 'memory_all', 'early_stop']));
    const actions = new Set(all.flatMap((t) => t.steps.map((s) => s.turn.action)));
    expect(actions).toEqual(new Set(['RETRIEVE', 'ASK', 'STOP']));
    // Some trajectory appends a late-activatable target's slot after the first turn.
    const late = all.some((t) => t.steps.some((s, i) => i > 0 && s.turn.state.length > t.steps[i - 1]!.turn.state.length));
    expect(late).toBe(true);
  });

  it('every example target parses, and its input is the state and history before the step', () => {
    for (const { inst, ts } of built.slice(0, 4)) {
      for (const t of ts) {
        const ex = trajectoryExamples(inst, t, MAX_TURNS);
        ex.forEach((e, i) => {
          expect(parseTurn(e.target).ok).toBe(true);
          const user = e.input[1]!.content;
          expect(user).toContain(`TURN: ${i + 1} of ${MAX_TURNS}`);
          if (i === 0) expect(user).toContain('(no slots yet)');
          else expect(user).toContain(`[${i}] ${t.steps[i - 1]!.turn.action}: ${t.steps[i - 1]!.turn.execute}`);
          // Targets never leak into the input beyond what observations revealed (the seed question of an un-asked target).
          for (const tg of inst.targets)
            if (!t.steps.slice(0, i).some((s) => s.acts.includes(tg.id) && s.turn.action === 'ASK')) expect(user).not.toContain(tg.seedQuestion);
        });
      }
    }
  });
});
