// The trainable IntentRL-style Ask/Stop clarifier (variant: clarifier; method §8.5): the same
// IEG-scaffolded builder with no Retrieve and an empty STATE; it sees the frozen profile (its
// examples are what it sees in rollouts: its menu prompt and the profile); the teacher writes
// q* from the dialogue (so a Stop target holds the answers it got, not the query word for word);
// the trainer replays its turns under its own menu grammar.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildInstance, CLARIFIER_KINDS, type BuildOptions } from '../../data/sft/build.ts';
import { OfflineMemory } from '../../data/sft/memory.ts';
import type { Teacher, TeacherInput } from '../../data/sft/teacher.ts';
import { templateRefine } from '../../data/sft/teacher.ts';
import { CLARIFIER_ACTIONS, menuGrammarEbnf } from '../../structured/turn/menu-grammar.ts';
import { POLICY_GRAMMAR } from '../../structured/turn/grammar-ebnf.ts';
import { HashedEncoder } from '../../encoders/hashed.ts';
import { turnConstraint } from '../../rollout/policy-constraint.ts';
import { baselineSystemPrompt } from '../../rollout/prompt.ts';
import { specOf } from '../../structured/turn-masks.ts';
import { trajectoryExamples } from '../../rollout/sft-examples.ts';
import { arbInstance } from './check.ts';
import { GSTEER_GRAMMARS } from '../../rollout/env/grammars.ts';

const encoder = new HashedEncoder(128);

describe('variant = clarifier', () => {
  it('builds Ask/Stop trajectories in IEG order with an empty STATE; q* from the dialogue; examples with its menu prompt and the frozen profile', async () => {
    await fc.assert(
      fc.asyncProperty(arbInstance('a', 'u'), fc.integer(), async (raw, seed) => {
        const a = { ...raw, profile: 'SECRET PROFILE LINE' };
        const seen: TeacherInput[] = [];
        const teacher: Teacher = { name: 'recording', refine: async (i) => (seen.push(i), templateRefine(i)) };
        const memory = await OfflineMemory.build([a], encoder);
        const o: BuildOptions = { seed, optionalRatios: [0, 0.5, 1], ordersPerSubgraph: 2, maxTurns: 12, topK: 3, memory, teacher, variant: 'clarifier' };
        const ts = await buildInstance(a, o);
        expect(ts.length).toBeGreaterThan(0);
        for (const t of ts) {
          expect(CLARIFIER_KINDS).toContain(t.scenario.kind);
          for (const s of t.steps) {
            expect(CLARIFIER_ACTIONS).toContain(s.turn.action);
            expect(s.turn.state).toEqual([]);
          }
          // IEG order: every asked target's parents (in the subgraph) were asked before it
          const asked = new Set<string>();
          for (const s of t.steps)
            for (const id of s.acts) {
              for (const [p, c] of a.edges) if (c === id && t.subgraph.includes(p)) expect(asked.has(p)).toBe(true);
              asked.add(id);
            }
          for (const ex of trajectoryExamples(a, t, 12, 'clarifier')) {
            expect(ex.input[0]?.content).toBe(baselineSystemPrompt(CLARIFIER_ACTIONS));
            expect(ex.input[1]?.content).toContain('PROFILE: SECRET PROFILE LINE');
          }
          // q* holds every seed answer the dialogue got (the template teacher states them)
          const answers = t.steps.flatMap((s) => (s.observation.kind === 'answer' ? [s.observation.answer] : []));
          const stop = t.steps[t.steps.length - 1]!;
          expect(stop.turn.action).toBe('STOP');
          for (const ans of answers)
            if (ans.trim())
              expect(stop.turn.execute).toContain(
                ans
                  .replace(/\s+/g, ' ')
                  .trim()
                  .replace(/[.;]+$/, ''),
              );
          if (answers.some((x) => x.trim())) expect(stop.turn.execute).not.toBe(a.query.replace(/\s+/g, ' ').trim());
        }
        expect(seen.every((i) => i.profile === 'SECRET PROFILE LINE')).toBe(true);
      }),
      { numRuns: 40, seed: 3 },
    );
  });

  it('the trainer replays a clarifier turn under the clarifier grammar, a G-STEER turn under the policy grammar', () => {
    const clar = menuGrammarEbnf(CLARIFIER_ACTIONS);
    expect(specOf(turnConstraint(undefined, 64, clar), GSTEER_GRAMMARS)).toEqual({ type: 'grammar', grammar: clar });
    expect(specOf(turnConstraint(undefined, 64), GSTEER_GRAMMARS)).toEqual({ type: 'grammar', grammar: POLICY_GRAMMAR });
    const applied = { tokenFilter: 'policy_turn', tokenFilterVersion: 1, specSha256: 'x', maxTokens: 64 } as const;
    // a reported spec hash that no trained grammar has: refused, naming the hashes it could build
    expect(() => specOf(turnConstraint(applied, 64), GSTEER_GRAMMARS)).toThrow(/sampled under constraint x, but this gsteer builds \w{12} or \w{12}/);
  });
});
