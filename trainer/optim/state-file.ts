// An AdamW state as one JSON file (optimizer.json in an adapter version dir): float32 moments
// written as JSON numbers, which read back to the same float32 values (resume is byte-exact).
// Names are the variables' without the per-process adapter counter (`lora3/layers.0...` is
// written `layers.0...`), so a state saved, loaded in another process and saved again is the
// same bytes (the Tinker engine's save/load round trip, trainer/engine/tfjs-engine.ts).
import { readFileSync, writeFileSync } from 'node:fs';
import type { AdamW } from './adamw.ts';

export function writeOptimizerFile(path: string, optimizer: AdamW): void {
  const s = optimizer.state();
  const names = s.names.map((n) => n.replace(/^lora\d+\//, ''));
  writeFileSync(path, JSON.stringify({ ...s, names, m: s.m.map((x) => Array.from(x)), v: s.v.map((x) => Array.from(x)) }));
}

export function readOptimizerFile(path: string, optimizer: AdamW): void {
  const s = JSON.parse(readFileSync(path, 'utf8')) as { step: number; names: string[]; shapes: number[][]; m: number[][]; v: number[][] };
  optimizer.load({ ...s, m: s.m.map((x) => Float32Array.from(x)), v: s.v.map((x) => Float32Array.from(x)) });
}
