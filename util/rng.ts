// Seeded, serializable PRNG (xoshiro128**, seeded through splitmix32). Every random choice
// in gsteer goes through one of these so runs replay exactly (method §10) and the state can
// be checkpointed and restored.

function splitmix32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

const rotl = (x: number, k: number) => ((x << k) | (x >>> (32 - k))) >>> 0;

export type RngState = [number, number, number, number];

export class Rng {
  private s: RngState;

  constructor(seed: number | RngState) {
    if (Array.isArray(seed)) {
      this.s = [...seed] as RngState;
    } else {
      const sm = splitmix32(seed);
      this.s = [sm(), sm(), sm(), sm()];
    }
  }

  /** Derive an independent stream, e.g. `rng.fork('rollout', step, group)`. */
  static derive(seed: number, ...labels: (string | number)[]): Rng {
    let h = seed >>> 0;
    for (const label of labels) {
      for (const ch of String(label)) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
      h = Math.imul(h ^ 0x2f, 0x01000193) >>> 0;
    }
    return new Rng(h);
  }

  /** Next uint32. */
  nextU32(): number {
    const s = this.s;
    const result = Math.imul(rotl(Math.imul(s[1], 5) >>> 0, 7), 9) >>> 0;
    const t = (s[1] << 9) >>> 0;
    s[2] = (s[2] ^ s[0]) >>> 0;
    s[3] = (s[3] ^ s[1]) >>> 0;
    s[1] = (s[1] ^ s[2]) >>> 0;
    s[0] = (s[0] ^ s[3]) >>> 0;
    s[2] = (s[2] ^ t) >>> 0;
    s[3] = rotl(s[3], 11);
    return result;
  }

  /** Uniform float in [0, 1) with 32 bits of randomness. */
  next(): number {
    return this.nextU32() / 4294967296;
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** Fisher-Yates shuffle into a new array. */
  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [out[i], out[j]] = [out[j] as T, out[i] as T];
    }
    return out;
  }

  /** Standard normal (Box-Muller), for weight init. */
  normal(): number {
    const u = 1 - this.next();
    const v = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  state(): RngState {
    return [...this.s] as RngState;
  }
}
