// Copy augmentation for refiner examples (trainer/pretrain/augment-qref.ts) on a demonstration
// written here: which words count as copied, that they are replaced the same way in the user
// message and the target (rationale and queries), that the system message and the words the
// queries do not take from the prompt stay, and that numbers keep their length.
import { describe, expect, it } from 'vitest';
import { augmentRefinerExample, copiedWords, isRefinerExample, refinerNameWords } from '../../../trainer/pretrain/augment-qref.ts';
import { augmentWords } from '../../../trainer/pretrain/data.ts';
import { Rng } from '../../../util/rng.ts';

const ex = {
  trajectoryId: 'demo-001',
  input: [
    { role: 'system' as const, content: 'You refine the search queries of a research agent. Kell is a system word here.' },
    {
      role: 'user' as const,
      content:
        'Question: Where was the engineer who designed Kestwick Bridge born?\n\nReasoning so far:\nKestwick Bridge was completed in 1784 to designs by Amos Kell. What is still missing is where Kell was born.\n\nCandidate queries:\n- Kestwick Bridge 1784\n- who designed Kestwick Bridge',
    },
  ],
  target: "RATIONALE: The queries ask again who designed the bridge; search Amos Kell's birthplace.\nQUERIES:\n- Amos Kell engineer born\n- Kell 1784",
};

describe('QREF copy augmentation', () => {
  it('copied words: names and 2+ digit numbers of the queries that the prompt holds, in order of use', () => {
    expect(isRefinerExample(ex)).toBe(true);
    // "engineer", "born" are lower case; "The" would be a function word; Kestwick/Bridge are not in the queries
    expect(copiedWords(ex)).toEqual(['Amos', 'Kell', '1784']);
    // every name-like word of the user message, "Question", "Reasoning", "Candidate", "Where", "What" left out
    expect(refinerNameWords([ex])).toEqual(['Kestwick', 'Bridge', 'Kestwick', 'Bridge', 'Amos', 'Kell', 'Kell', 'Kestwick', 'Bridge', 'Kestwick', 'Bridge']);
    expect(augmentWords([ex])).toEqual(refinerNameWords([ex])); // a file of refiner examples draws from their names
  });

  it('replaces each copied word the same way everywhere but the system message', () => {
    const out = augmentRefinerExample(ex, ['Marrowby', 'Tallow'], new Rng(3))!;
    const user = out.input[1]!.content;
    const [first, second] = out.target.split('\n').slice(2); // the two query lines
    const [amos, kell] = first!.split(' ').slice(1, 3) as [string, string];
    const year = second!.split(' ')[2]!;
    expect(['Marrowby', 'Tallow']).toContain(amos);
    expect(['Marrowby', 'Tallow']).toContain(kell);
    expect(year).toMatch(/^[1-9]\d{3}$/); // a number of the same length, no leading zero
    expect(out.target).toBe(
      `RATIONALE: The queries ask again who designed the bridge; search ${amos} ${kell}'s birthplace.\nQUERIES:\n- ${amos} ${kell} engineer born\n- ${kell} ${year}`,
    );
    expect(user).toContain(`completed in ${year} to designs by ${amos} ${kell}. What is still missing is where ${kell} was born.`);
    expect(user).toContain(`- Kestwick Bridge ${year}`); // Kestwick Bridge is not copied: it stays
    expect(out.input[0]).toEqual(ex.input[0]); // the system message keeps "Kell"
  });

  it('nothing copied (no query word in the prompt): null, the example trains as it is', () => {
    expect(augmentRefinerExample({ ...ex, target: 'RATIONALE: r\nQUERIES:\n- Marrowby engineer' }, ['Tallow'], new Rng(1))).toBeNull();
  });
});
