import { describe, it, expect } from 'vitest';
import { countQuestions, countMultiQuestion, countRepeated } from '../../reward/questions.ts';
import { HashedEncoder } from '../../encoders/hashed.ts';
import { TableEncoder } from './fake-encoder.ts';

describe('countQuestions (n_multi definition)', () => {
  it.each([
    ['What is your budget?', 1],
    ['What is your budget? And the timeline?', 2],
    ['Budget?? Really?!', 2],
    ['See example.com/?q=1 — which one?', 1],
    ['Is it for work ("or fun?") or both?', 2],
    ['Tell me your budget.', 0],
    ['预算是多少？时间呢？', 2],
    ['What is your budget and timeline?', 1],
  ])('%j -> %i', (text, n) => expect(countQuestions(text)).toBe(n));

  it('counts Ask turns with more than one question', () => {
    expect(countMultiQuestion(['A?', 'B? C?', 'D? E? F?', 'no mark'])).toBe(2);
  });
});

describe('countRepeated (n_rep, method §4 threshold 0.86)', () => {
  it('counts each turn once, against any earlier question, at >= threshold', async () => {
    // a = e1, b = e2, a2 = e1 (cos 1 to a: a repeat); half = (0.5, 0.866) has cos 0.5 to a
    // and sqrt(0.75) = 0.866 to b, so it repeats b at threshold 0.86 but not at 0.87.
    const c = Math.sqrt(1 - 0.5 ** 2);
    const enc = new TableEncoder({ a: [1, 0], b: [0, 1], a2: [1, 0], half: [0.5, c] });
    expect(await countRepeated(['a', 'b', 'a2'], 0.86, enc)).toBe(1);
    expect(await countRepeated(['a', 'b', 'half'], 0.86, enc)).toBe(1);
    expect(await countRepeated(['a', 'b', 'half'], 0.87, enc)).toBe(0);
    // The same question three times: turns 2 and 3 repeat.
    expect(await countRepeated(['a', 'a', 'a'], 0.86, enc)).toBe(2);
    expect(await countRepeated(['a'], 0.86, enc)).toBe(0);
  });

  it('with the hashed encoder, a verbatim repeat counts and an unrelated question does not', async () => {
    const enc = new HashedEncoder(512);
    expect(await countRepeated(['What is your nightly hotel budget?', 'Which airline do you prefer?', 'What is your nightly hotel budget?'], 0.86, enc)).toBe(
      1,
    );
  });
});
