// Copy drills (trainer/pretrain/copy-drill.ts, `--pretrain-drill F`): a drill is a valid refiner
// turn whose queries are the names its prompt lists, in order, drawn from the pool; the same
// rng state gives the same drill. stepSequence puts drills in about the share asked for,
// reproducibly, leaves every sequence as it was at 0, and a drill's tokens are the drill's; a
// run on G-STEER step examples is refused.
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { qwen3Tokenizer } from '../../../core/tokenizer.ts';
import { selectBackend } from '../../../model/backend.ts';
import { loadModel, type Qwen3Model } from '../../../model/index.ts';
import { parseRefinerTurn } from '../../../structured/qref/turn.ts';
import { copyDrill, DRILL, DRILL_HEADER, drillContext } from '../../../trainer/pretrain/copy-drill.ts';
import { stepSequence, toSequence } from '../../../trainer/pretrain/data.ts';
import { pretrainModel } from '../../../trainer/pretrain/pretrain.ts';
import { pretrainOptions } from '../../../trainer/pretrain/cli.ts';
import { tokenizeExample } from '../../../trainer/sft/tokens.ts';
import { InputError } from '../../../util/errors.ts';
import { Rng } from '../../../util/rng.ts';
import { sha256File } from '../../../util/atomic.ts';

const POOL = ['Kestwick', 'Bridge', 'Amos', 'Kell', 'Sallow', 'Light'];
const CAPS = { maxQueries: 5, maxQueryChars: 200, maxRationaleChars: 300 };

/** The names a drill's user message lists (its lines after the header, without the bullet). */
const listed = (content: string) =>
  content
    .split('\n')
    .slice(1)
    .map((l) => l.slice(2));

describe('copyDrill', () => {
  it('is a refiner turn whose queries are the listed names, in order, from the pool', () => {
    const counts = new Set<number>();
    for (let s = 0; s < 200; s++) {
      const d = copyDrill(POOL, new Rng(s));
      const user = d.input[0]!;
      expect(d.input).toHaveLength(1);
      expect(user.role).toBe('user');
      expect(user.content.split('\n')[0]).toBe(DRILL_HEADER);
      const names = listed(user.content);
      counts.add(names.length);
      const turn = parseRefinerTurn(d.target, CAPS);
      expect(turn.ok).toBe(true);
      if (turn.ok) expect(turn.turn.queries).toEqual(names);
      for (const n of names) {
        const words = n.split(' ');
        expect(words.length).toBeGreaterThanOrEqual(1);
        expect(words.length).toBeLessThanOrEqual(DRILL.maxWords);
        for (const w of words) expect(POOL).toContain(w);
      }
    }
    expect([...counts].sort()).toEqual([3, 4, 5]); // DRILL.minNames .. maxNames, each drawn
  });

  it('the same rng state gives the same drill, another seed another', () => {
    expect(copyDrill(POOL, new Rng(7))).toEqual(copyDrill(POOL, new Rng(7)));
    expect(copyDrill(POOL, new Rng(7))).not.toEqual(copyDrill(POOL, new Rng(8)));
  });
});

describe('prompt drills', () => {
  const SYSTEM = { role: 'system' as const, content: 'You refine the search queries of a research agent.' };
  const REST = 'Reasoning so far:\nAmos Kell designed it.\n\nCandidate queries:\n- Kestwick Bridge 1784';
  const ex = {
    trajectoryId: 'demo-001',
    input: [SYSTEM, { role: 'user' as const, content: `Question: Where was the engineer who designed Kestwick Bridge born?\n\n${REST}` }],
    target: 'RATIONALE: Search the engineer.\nQUERIES:\n- Amos Kell born',
  };

  it("drillContext is the example's system message and its user message after the question", () => {
    expect(drillContext(ex)).toEqual({ system: SYSTEM, rest: REST });
    expect(drillContext({ ...ex, input: [{ role: 'user', content: 'Question: only this' }] })).toEqual({ system: undefined, rest: '' });
  });

  it("a prompt drill has the plain drill's names and target, in the example's prompt, as query lines or one sentence", () => {
    const layouts = new Set<string>();
    for (let s = 0; s < 100; s++) {
      const plain = copyDrill(POOL, new Rng(s));
      const d = copyDrill(POOL, new Rng(s), drillContext(ex));
      expect(d.target).toBe(plain.target); // the names are drawn first, the same draws
      expect(d.input[0]).toEqual(SYSTEM);
      const user = d.input[1]!.content;
      const names = listed(plain.input[0]!.content);
      const [question, ...after] = user.split('\n\n');
      expect(after.join('\n\n')).toBe(REST);
      if (question!.includes('\n')) {
        layouts.add('lines');
        expect(question).toBe(plain.input[0]!.content);
      } else {
        layouts.add('sentence');
        expect(question).toBe(`${DRILL_HEADER} ${names.slice(0, -1).join(', ')} and ${names.at(-1)}.`);
      }
    }
    expect([...layouts].sort()).toEqual(['lines', 'sentence']);
  });
});

describe('stepSequence with drills', () => {
  const tok = qwen3Tokenizer();
  let model: Qwen3Model;
  const ex = {
    trajectoryId: 'demo-001',
    input: [
      { role: 'user' as const, content: 'Question: Where was the engineer who designed Kestwick Bridge born?\n\nReasoning so far:\nAmos Kell designed it.' },
    ],
    target: 'RATIONALE: Search the engineer.\nQUERIES:\n- Amos Kell born',
  };
  const data = () => {
    const t = tokenizeExample(tok, ex, 0);
    return { train: [{ ids: t.inputIds, start: t.promptLength }], examples: [ex], words: POOL };
  };
  beforeAll(async () => {
    await selectBackend('wasm', () => {});
    model = await loadModel('models/tiny-qref');
  });
  afterAll(() => model?.dispose());

  it('drills about the share asked for, reproducibly, and never at 0', () => {
    const d = data();
    const o = { seed: 5, context: null, maxLen: 4096, augment: 0 };
    let n = 0;
    for (let step = 0; step < 400; step++) {
      expect(stepSequence(tok, model, d, 0, { ...o, drill: 0 }, step, 1)).toEqual({ seq: d.train[0], augmented: false });
      const r = stepSequence(tok, model, d, 0, { ...o, drill: 0.25 }, step, 1);
      expect(stepSequence(tok, model, d, 0, { ...o, drill: 0.25 }, step, 1)).toEqual(r);
      if (r.drill) n++;
      else expect(r.seq).toBe(d.train[0]);
    }
    // Binomial(400, 0.25): mean 100, sd 8.7 (every pool word is in models/tiny-qref's vocabulary)
    expect(n).toBeGreaterThan(65);
    expect(n).toBeLessThan(135);
  });

  it("a drill's sequence is the drill the same draw makes, tokenized as any example", () => {
    const d = data();
    const r = stepSequence(tok, model, d, 0, { seed: 5, context: null, maxLen: 4096, augment: 1, drill: 1 }, 3, 0);
    expect(r).toMatchObject({ drill: true, augmented: false });
    const rng = Rng.derive(5, 'pretrain-drill', 3, 0);
    rng.next(); // the share draw
    const drill = copyDrill(POOL, rng);
    expect(r.seq).toEqual(toSequence(tok, drill, 0, { context: null, maxLen: 4096 }));
    expect(tok.decode(r.seq.ids.slice(r.seq.start))).toBe(`${drill.target}<|im_end|>`);
  });

  it("with drillShape prompt, a drill sits in train[i]'s own prompt", () => {
    const d = data();
    const r = stepSequence(tok, model, d, 0, { seed: 5, context: null, maxLen: 4096, augment: 0, drill: 1, drillShape: 'prompt' }, 3, 0);
    const rng = Rng.derive(5, 'pretrain-drill', 3, 0);
    rng.next(); // the share draw
    const drill = copyDrill(POOL, rng, drillContext(ex));
    expect(drill.input[0]!.content).toContain('Reasoning so far:\nAmos Kell designed it.');
    expect(r).toMatchObject({ drill: true, augmented: false });
    expect(r.seq).toEqual(toSequence(tok, drill, 0, { context: null, maxLen: 4096 }));
  });

  it('refuses drills on G-STEER step examples (no refiner names to draw), before training', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gsteer-drill-'));
    try {
      const f = join(dir, 'steps.jsonl');
      // a generic chat example whose target is not a refiner turn stands for non-refiner examples
      writeFileSync(f, `${JSON.stringify({ id: 'x-1', input: [{ role: 'user', content: 'Hello Kestwick' }], target: 'ACTION: STOP', meta: {} })}\n`);
      const m = join(dir, 'model'); // a copy: the committed base must not be touched whatever happens
      cpSync('models/tiny-qref', m, { recursive: true });
      const before = sha256File(join(m, 'model.safetensors'));
      const o = pretrainOptions({ 'pretrain-steps': '1', 'pretrain-held-out': '0', 'pretrain-drill': '0.5' }, 1);
      const run = pretrainModel(m, f, tok, { ...o, progress: false, log: () => {} });
      await expect(run).rejects.toThrow(InputError);
      await expect(run).rejects.toThrow(/--pretrain-drill 0.5 needs QREF refiner examples/);
      expect(sha256File(join(m, 'model.safetensors'))).toBe(before);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
