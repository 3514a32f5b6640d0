// The rule-based memory judge (rollout/judge-rule.ts): one golden case per method §6 criterion.
import { describe, it, expect } from 'vitest';
import { InstanceSchema } from '../../data/schema.ts';
import { HashedEncoder } from '../../encoders/hashed.ts';
import { RuleJudge, supportFraction, isGeneric } from '../../rollout/judge-rule.ts';
import type { UserSnapshot } from '../../rollout/user-store.ts';
import type { EvidenceSlot } from '../../core/types.ts';
import { answer, covered, trajectory } from './helpers/trajectory.ts';

const encoder = new HashedEncoder(512);
const judge = new RuleJudge(encoder);
const instance = InstanceSchema.parse({
  id: 'inst-1',
  userId: 'u1',
  taskId: 't',
  split: 'train',
  query: 'Which laptop should I buy?',
  profile: 'Ecology PhD student in Montpellier.',
  targets: [{ id: 't', description: 'd', seedQuestion: 'q', seedAnswer: 'a', weight: 1 }],
});
const empty: UserSnapshot = { userId: 'u1', version: 1, profile: '', memories: [] };
const USER_SAID = [
  answer('Budget?', 'Under 1200 EUR, paid from my grant.'),
  answer('OS?', 'I always use Linux for my analyses.'),
  answer('Anything else?', 'I travel to the field station this week, and I was diagnosed with diabetes so battery life matters.'),
  answer('Where?', 'I live at 12 Rose Street.'),
  { kind: 'memory' as const, query: 'software', results: [{ name: 'stats_software', purpose: 'analysis tools', value: 'R and QGIS', score: 0.8 }] },
];

async function reasons(slots: EvidenceSlot[], snapshot = empty) {
  const v = await judge.judge({ instance, trajectory: trajectory(0, slots, USER_SAID), snapshot });
  return { reasons: Object.fromEntries(v.verdicts.map((x) => [x.slot.name, x.reason])), sentence: v.profileSentence };
}

describe('RuleJudge', () => {
  it('classifies each criterion', async () => {
    const { reasons: r, sentence } = await reasons([
      covered('budget', 'spending limit', 'under 1200 EUR'), // said by the user -> kept
      covered('tools', 'analysis tools', 'R and QGIS', 'memory'), // retrieved from memory -> kept
      { name: 'screen', purpose: 'screen size', status: 'partial', source: 'dialogue', value: '14 inch' }, // not covered
      covered('gpu', 'graphics card', 'needs an RTX 4090 GPU'), // never said: weak inference
      covered('advice', 'what to buy', 'you should consider a ThinkPad'), // assistant advice
      covered('pref', 'preference', 'no particular preference'), // generic
      covered('trip', 'travel plans', 'field station this week'), // temporary
      covered('health', 'health', 'diagnosed with diabetes'), // sensitive
      covered('home', 'home address', '12 Rose Street'), // sensitive (precise address)
      covered('city', 'where the user lives', 'Montpellier'), // in the profile already (every content word)
      covered('role', 'occupation', 'Ecology PhD student', 'profile'), // source profile
    ]);
    expect(r).toEqual({
      budget: 'kept',
      tools: 'kept',
      screen: 'not_covered',
      gpu: 'unsupported',
      advice: 'assistant_advice',
      pref: 'generic',
      trip: 'temporary',
      health: 'sensitive',
      home: 'sensitive',
      city: 'in_profile',
      role: 'in_profile',
    });
    expect(sentence).toBeNull(); // nothing durable among the kept slots
  });

  it('adds one profile sentence for a durable marker or a decision recurring across tasks', async () => {
    const durable = await reasons([covered('budget', 'spending limit', 'under 1200 EUR'), covered('os', 'operating system', 'always Linux')]);
    expect(durable.reasons).toEqual({ budget: 'kept', os: 'kept' });
    expect(durable.sentence).toBe('Operating system: always Linux.');
    const recurring: UserSnapshot = {
      ...empty,
      memories: [
        {
          id: 'm1-0',
          name: 'budget',
          purpose: 'spending limit',
          value: 'under 1000 EUR',
          sourceInstance: 'other-task',
          addedIn: 1,
          encoder: encoder.name,
          embedding: new Float32Array(512),
        },
      ],
    };
    const rec = await reasons([covered('budget', 'spending limit', 'under 1200 EUR')], recurring);
    expect(rec.sentence).toBe('Spending limit: under 1200 EUR.');
    const sameTask = await reasons([covered('budget', 'spending limit', 'under 1200 EUR')], {
      ...recurring,
      memories: recurring.memories.map((m) => ({ ...m, sourceInstance: 'inst-1' })),
    });
    expect(sameTask.sentence).toBeNull();
  });

  it('support fraction and generic values, worked by hand', () => {
    // value words {under, 1200, eur, grant, money}; evidence has under, 1200, eur, grant -> 4/5
    expect(supportFraction('under 1200 EUR grant money', ['Under 1200 EUR, paid from my grant.'])).toBeCloseTo(0.8, 10);
    // "travels" matches "travel" on the 4-letter prefix "trav"; "abroad" is missing -> 1/2
    expect(supportFraction('travels abroad', ['I travel a lot'])).toBe(0.5);
    expect(supportFraction('the', ['the'])).toBe(0);
    expect(['Any', 'not sure.', 'it depends', 'general stuff'].map(isGeneric)).toEqual([true, true, true, true]);
    expect(['Linux', 'under 1200 EUR'].map(isGeneric)).toEqual([false, false]);
  });
});
