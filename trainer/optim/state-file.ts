// An AdamW state as one JSON file (optimizer.json in an adapter version dir): float32 moments
// written as JSON numbers, which read back to the same float32 values (resume is byte-exact).
// Names are the variables' without the per-process adapter counter (`lora3/layers.0...` is
// written `layers.0...`), so a state saved, loaded in another process and saved again is the
// same bytes (the Tinker engine's save/load round trip, trainer/engine/tfjs-engine.ts).
// Written atomically and fsynced (util/atomic.ts); a moment that is not finite is never
// written (JSON would turn NaN into null, and null reads back as 0), and a file holding one
// is refused on reading.
import { readFileSync } from 'node:fs';
import { writeFileAtomic } from '../../util/atomic.ts';
import { InputError } from '../../util/errors.ts';
import { firstNonFinite } from '../../model/io/finite.ts';
import type { AdamW } from './adamw.ts';

export function writeOptimizerFile(path: string, optimizer: AdamW): void {
  const s = optimizer.state();
  for (const [which, list] of [
    ['m', s.m],
    ['v', s.v],
  ] as const)
    list.forEach((x, i) => {
      const bad = firstNonFinite(x);
      if (bad >= 0)
        throw new Error(`optimizer state ${which}[${i}] (${s.names[i]}) holds ${x[bad]} at index ${bad}; non-finite optimizer state is not written`);
    });
  const names = s.names.map((n) => n.replace(/^lora\d+\//, ''));
  writeFileAtomic(path, JSON.stringify({ ...s, names, m: s.m.map((x) => Array.from(x)), v: s.v.map((x) => Array.from(x)) }));
}

export function readOptimizerFile(path: string, optimizer: AdamW): void {
  const s = JSON.parse(readFileSync(path, 'utf8')) as { step: number; names: string[]; shapes: number[][]; m: (number | null)[][]; v: (number | null)[][] };
  for (const [which, list] of [
    ['m', s.m],
    ['v', s.v],
  ] as const)
    list.forEach((x, i) => {
      const bad = x.findIndex((y) => typeof y !== 'number' || !Number.isFinite(y));
      if (bad >= 0)
        throw new InputError(
          `${path}: ${which}[${i}] (${s.names[i]}) holds ${JSON.stringify(x[bad])} at index ${bad}, not a finite number; the optimizer state is damaged: resume from an earlier checkpoint`,
        );
    });
  optimizer.load({ ...s, m: s.m.map((x) => Float32Array.from(x as number[])), v: s.v.map((x) => Float32Array.from(x as number[])) });
}
