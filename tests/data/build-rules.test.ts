// The embedded build rules on a small pair worked by hand (data/build/rules.ts).
import { describe, expect, it } from 'vitest';
import { ruleCandidates, ruleIeg, ruleProfile, ruleSeeds, ruleSlots, ruleValidate, rubricWeights } from '../../data/build/rules.ts';
import { splitPairs } from '../../data/build/split.ts';
import type { BuiltTarget, RawInstance } from '../../data/build/types.ts';

const inst: RawInstance = {
  id: 'u-t',
  query: 'Plan a trip to Lisbon.',
  task: { id: 't', domain: 'travel', query: 'Plan a trip to Lisbon.', rubric: [] },
  user: { id: 'u', persona: { budget: 'about 2000 euros', dates: ['travel dates in May'], diet: 'vegan' }, context: [], profile: '' },
  rubric: [
    { criterion: 'Respects the total budget; considers the travel dates', weight: 1.0 },
    { criterion: 'Uses clear headings', weight: 0.3, dimension: 'presentation' },
    { criterion: 'Weather', weight: 0.2 },
    { criterion: 'Plans a trip to Lisbon', weight: 0.45 },
    { criterion: 'Keeps within the total budget limit', weight: 0.4 },
    { criterion: "Considers the pet's care", weight: 0.6 },
  ],
};

describe('embedded build rules (worked by hand)', () => {
  const cands = ruleCandidates(inst);
  const weights = rubricWeights(cands, inst.rubric);
  const decisions = ruleValidate(inst, cands, weights);

  it('splits at the semicolon, describes without the rubric verb, shares the item weight', () => {
    expect(cands.map((c) => [c.id, c.description, c.rubricItems[0]])).toEqual([
      ['c1', 'The total budget', 0],
      ['c2', 'The travel dates', 0],
      ['c3', 'Clear headings', 1],
      ['c4', 'Weather', 2],
      ['c5', 'Plans a trip to Lisbon', 3],
      ['c6', 'The total budget limit', 4],
      ['c7', "The pet's care", 5],
    ]);
    expect([...weights.values()]).toEqual([0.5, 0.5, 0.3, 0.2, 0.45, 0.4, 0.6]);
  });

  it('drops with the documented reasons; essential = top ceil(0.4 x 2) = 1 by weight', () => {
    expect(decisions.map((d) => [d.id, d.keep, d.reason, d.essential])).toEqual([
      ['c1', true, null, true],
      ['c2', true, null, false],
      ['c3', false, 'superficial', false],
      ['c4', false, 'narrow', false], // one stem ("weather")
      ['c5', false, 'in_query', false], // plan, trip, lisbon all in the query
      ['c6', false, 'redundant', false], // {total, budget, limit} vs c1 {total, budget}: Jaccard 2/3
      ['c7', false, 'ungrounded', false], // no persona fact mentions a pet
    ]);
  });

  const targets: BuiltTarget[] = [
    { id: 'c1', description: 'The total budget', criterion: 'Respects the total budget', weight: 0.5, essential: true, seedQuestion: '', seedAnswer: '' },
    { id: 'c2', description: 'The travel dates', criterion: 'considers the travel dates', weight: 0.5, essential: false, seedQuestion: '', seedAnswer: '' },
  ];

  it('seed Q/A quote the persona facts the grounding rule picks (the budget fact for the budget, the dates for the dates)', () => {
    expect(ruleSeeds(inst, targets)).toEqual([
      { id: 'c1', seedQuestion: 'Could you tell me about your total budget?', seedAnswer: 'The total budget: budget: about 2000 euros.' },
      { id: 'c2', seedQuestion: 'Could you tell me about your travel dates?', seedAnswer: 'The travel dates: dates: travel dates in May.' },
    ]);
  });

  it('slots: snake_case of the first content words', () => {
    expect(ruleSlots(targets).map((s) => s.name)).toEqual(['total_budget', 'travel_dates']);
    const twice = ruleSlots([targets[0]!, { ...targets[0]!, id: 'c9' }]);
    expect(twice.map((s) => s.name)).toEqual(['total_budget', 'total_budget_2']);
  });

  it('IEG: essential -> optional on a shared stem; a conditional child is late-activatable', () => {
    const t = (id: string, description: string, criterion: string, essential: boolean, weight: number): BuiltTarget => ({
      id,
      description,
      criterion,
      essential,
      weight,
      seedQuestion: '',
      seedAnswer: 'x',
    });
    const ieg = ruleIeg([
      t('h', 'Current heating system', 'Considers the current heating system', true, 1),
      t('b', 'Budget', 'Respects the budget for upgrades', true, 0.9),
      t('s', 'Interest in solar panels', 'If the heating is replaced, considers interest in solar panels', false, 0.5),
      t('c', 'Local climate', 'Accounts for the local climate', false, 0.4),
    ]);
    expect(ieg).toEqual({ edges: [{ parent: 'h', child: 's' }], lateActivatable: ['s'] });
    expect(ruleIeg(targets)).toEqual({ edges: [], lateActivatable: [] }); // no shared stem
  });

  it('offline profile: leaves out values sharing two stems with a current value', () => {
    const others = [
      { purpose: 'budget', value: 'Budget: about 2000 euros for laptops', weight: 1 },
      { purpose: 'diet', value: 'Diet: vegan.', weight: 0.5 },
    ];
    expect(ruleProfile([{ seedAnswer: 'Budget: about 2000 euros' }], others)).toBe('From earlier requests: Diet: vegan.');
    expect(ruleProfile([{ seedAnswer: 'Budget: about 2000 euros' }], [])).toBe('');
  });
});

describe('Table 1 split protocol', () => {
  // 4 users x 3 tasks: 1 held-out user (round(0.25 x 4)) and 1 held-out task (round(0.34 x 3)).
  // The user's 3 pairs and the task's 4 pairs share one: 6 test pairs (both_unseen 1,
  // unseen_user 2, unseen_task 3); the goal round(0.3 x 12) = 4 is passed, and minSeen 1
  // adds one seen pair: 7 test, 5 train.
  const pairs = ['u1', 'u2', 'u3', 'u4'].flatMap((u) => ['t1', 't2', 't3'].map((t) => ({ id: `${u}-${t}`, userId: u, taskId: t })));
  const opts = { testFraction: 0.3, heldOutUsers: 0.25, heldOutTasks: 0.34, minSeen: 1 };

  it.each([1, 2, 3, 7])('seed %i: group sizes follow from the held-out counts', (seed) => {
    const p = splitPairs(pairs, { ...opts, seed });
    const count = (g: string | null) => p.filter((x) => x.group === g).length;
    expect([count(null), count('seen'), count('unseen_user'), count('unseen_task'), count('both_unseen')]).toEqual([5, 1, 2, 3, 1]);
    const trainUsers = new Set(p.filter((x) => x.split === 'train').map((x) => x.userId));
    for (const x of p.filter((y) => y.group === 'unseen_user' || y.group === 'both_unseen')) expect(trainUsers.has(x.userId)).toBe(false);
  });

  it('is a function of the seed; a fixed split is kept', () => {
    expect(splitPairs(pairs, { ...opts, seed: 5 })).toEqual(splitPairs(pairs, { ...opts, seed: 5 }));
    const fixed = pairs.map((p) => ({ ...p, split: 'train' as const }));
    expect(splitPairs(fixed, { ...opts, seed: 5 }).every((x) => x.split === 'train')).toBe(true);
  });
});
