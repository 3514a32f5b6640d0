// The synthetic policy behind orchestration tests and the benchmark: a softmax over a
// 16-token vocabulary, logits theta (the "adapter"). Small enough to train exactly in JS,
// real enough that GRPO on it moves the reward: the server samples from softmax(theta / T)
// and reports logprobs, the trainer takes clipped-ratio policy-gradient steps (method §5) with
// AdamW, and the adapter is a safetensors file the server loads by path, like vLLM does.
import type { Rng } from '../../util/rng.ts';

export const TOY_VOCAB = 16;
/** Toy token ids start here, well inside the Qwen3 id space (ids only; never decoded). */
export const TOY_BASE = 1000;
export const TOY_WORDS = [
  'alpha',
  'bravo',
  'charlie',
  'delta',
  'echo',
  'foxtrot',
  'golf',
  'hotel',
  'india',
  'juliet',
  'kilo',
  'lima',
  'mike',
  'november',
  'oscar',
  'papa',
];
/** Completion length in toy tokens (one STOP turn). */
export const TOY_LEN = 6;

/** log softmax(theta / T). */
export function logSoftmax(theta: ArrayLike<number>, temperature: number): number[] {
  const t = temperature > 0 ? temperature : 1;
  const z = Array.from(theta, (x) => x / t);
  const m = Math.max(...z);
  const lse = m + Math.log(z.reduce((s, x) => s + Math.exp(x - m), 0));
  return z.map((x) => x - lse);
}

export function entropy(logp: readonly number[]): number {
  return -logp.reduce((s, l) => s + Math.exp(l) * l, 0);
}

/** n iid draws from softmax(theta / T) by inverse CDF; ids and their logprobs. */
export function sampleToy(theta: ArrayLike<number>, temperature: number, rng: Rng, n: number): { ids: number[]; logprobs: number[] } {
  const logp = logSoftmax(theta, temperature);
  const ids: number[] = [];
  const logprobs: number[] = [];
  for (let i = 0; i < n; i++) {
    let u = rng.next();
    let k = 0;
    for (; k < TOY_VOCAB - 1; k++) {
      u -= Math.exp(logp[k] as number);
      if (u < 0) break;
    }
    ids.push(TOY_BASE + k);
    logprobs.push(logp[k] as number);
  }
  return { ids, logprobs };
}

export const toyIndex = (id: number) => id - TOY_BASE;
