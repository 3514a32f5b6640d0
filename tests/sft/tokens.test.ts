// SFT tokenization and batching: the loss mask covers exactly the target + <|im_end|>,
// the prompt ids are what the policy server sees, splits and batches are seeded.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { epochBatches, heldOutMask, isHeldOut, tokenizeExample } from '../../trainer/sft/tokens.ts';
import { encodeChat, IM_END_ID, qwen3Tokenizer } from '../../core/tokenizer.ts';
import { optimizerBytes, readOptimizer } from '../../trainer/sft/checkpoint.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

describe('tokenizeExample', () => {
  const tok = qwen3Tokenizer();
  const ex = {
    instanceId: 'i',
    userId: 'u',
    trajectoryId: 'i/s0/o0/dialogue',
    kind: 'dialogue' as const,
    step: 0,
    steps: 2,
    action: 'ASK' as const,
    input: [
      { role: 'system' as const, content: 'sys' },
      { role: 'user' as const, content: 'QUERY: plan a trip' },
    ],
    target: 'STATE:\nPLAN: ask\nACTION: ASK\nEXECUTE: Where to?',
  };
  it('prompt = encodeChat(input), then the target ids and <|im_end|>, mask 1 exactly there', () => {
    const t = tokenizeExample(tok, ex, 3);
    const prompt = encodeChat(tok, ex.input);
    const target = tok.encode(ex.target);
    expect(t.inputIds).toEqual([...prompt, ...target, IM_END_ID]);
    expect(t.targetMask).toEqual([...prompt.map(() => 0), ...target.map(() => 1), 1]);
    expect(tok.decode(t.inputIds.filter((_, i) => t.targetMask[i] === 1))).toBe(`${ex.target}<|im_end|>`);
    expect(t.promptLength).toBe(prompt.length);
    expect(t.index).toBe(3);
  });
});

describe('split and batches', () => {
  it('held-out membership depends only on (seed, trajectory id), and the fraction is about right', () => {
    const ids = [...Array(4000).keys()].map((i) => `inst${i % 50}/s${i % 3}/o${i}/dialogue`);
    const held = ids.filter((id) => isHeldOut(42, id, 0.1)).length;
    expect(held / ids.length).toBeGreaterThan(0.08);
    expect(held / ids.length).toBeLessThan(0.12);
    for (const id of ids.slice(0, 100)) expect(isHeldOut(42, id, 0.1)).toBe(isHeldOut(42, id, 0.1));
    expect(ids.filter((id) => isHeldOut(42, id, 0)).length).toBe(0);
  });
  it('heldOutMask: held-out steps come from held-out trajectories and never share a prompt with a trained step (property)', () => {
    // trajectories of up to 4 steps whose prompts are drawn from a small pool, so prompts
    // repeat across trajectories as the orders of one subgraph repeat turn 1
    const arb = fc.array(fc.array(fc.integer({ min: 0, max: 12 }), { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 30 });
    fc.assert(
      fc.property(arb, fc.integer(), fc.double({ min: 0, max: 0.9, noNaN: true }), (trajectories, seed, fraction) => {
        const examples = trajectories.flatMap((prompts, t) =>
          prompts.map((p) => ({ trajectoryId: `i/s0/o${t}/dialogue`, input: [{ role: 'user' as const, content: `prompt ${p}` }] })),
        );
        const mask = heldOutMask(examples, seed, fraction);
        const trained = new Set(examples.filter((_, i) => !mask[i]).map((e) => e.input[0]!.content));
        examples.forEach((e, i) => {
          const inHeldTrajectory = isHeldOut(seed, e.trajectoryId, fraction);
          if (mask[i]) expect(inHeldTrajectory).toBe(true);
          if (mask[i]) expect(trained.has(e.input[0]!.content)).toBe(false);
          // a held-out trajectory's step is moved to train only when a training trajectory has its prompt
          if (inHeldTrajectory && !mask[i])
            expect(examples.some((o) => !isHeldOut(seed, o.trajectoryId, fraction) && o.input[0]!.content === e.input[0]!.content)).toBe(true);
        });
      }),
    );
  });

  it('each epoch is a permutation cut into batches; same (seed, epoch) gives the same batches', () => {
    fc.assert(
      fc.property(fc.integer(), fc.integer({ min: 0, max: 5 }), fc.integer({ min: 1, max: 60 }), fc.integer({ min: 1, max: 16 }), (seed, epoch, n, bs) => {
        const b = epochBatches(seed, epoch, n, bs);
        expect(b.flat().sort((x, y) => x - y)).toEqual([...Array(n).keys()]);
        expect(b.length).toBe(Math.ceil(n / bs));
        for (const x of b.slice(0, -1)) expect(x.length).toBe(bs);
        expect(epochBatches(seed, epoch, n, bs)).toEqual(b);
      }),
    );
  });
});

describe('optimizer state file', () => {
  it('round-trips AdamW moments bit for bit', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gsteer-sft-opt-'));
    try {
      const s = {
        step: 7,
        names: ['a', 'b'],
        shapes: [[2, 3], [4]],
        m: [Float32Array.from([1, -2, 3.5, 1e-8, 0, 7]), Float32Array.from([0.1, 0.2, 0.3, 0.4])],
        v: [new Float32Array(6).fill(0.25), Float32Array.from([9, 8, 7, 6])],
      };
      const f = join(dir, 'optimizer.safetensors');
      writeFileSync(f, optimizerBytes(s));
      expect(readOptimizer(f)).toEqual(s);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
