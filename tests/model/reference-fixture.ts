// The NumPy reference fixtures (tests/reference/qwen3_ref.py writes them): a model folder,
// its PEFT adapter and the expected per-token values, loaded on a chosen backend.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { selectBackend, type BackendKind } from '../../model/backend.ts';
import { loadPeftAdapter } from '../../model/lora/peft.ts';
import type { LoraAdapter } from '../../model/lora/types.ts';
import { loadModel, type Qwen3Model } from '../../model/index.ts';

export const FIXTURES = join(import.meta.dirname, '../reference/fixtures');

export interface ReferenceValues {
  logprobs: number[][];
  entropy: number[][];
}

export interface Expected {
  inputs: number[][];
  base: ReferenceValues;
  adapter: ReferenceValues;
}

export const readExpected = (name: string): Expected => JSON.parse(readFileSync(join(FIXTURES, name, 'expected.json'), 'utf8')) as Expected;

/** Fixture `name`'s model and adapter on `backend` (selected first). */
export async function loadFixture(backend: BackendKind, name: string): Promise<{ model: Qwen3Model; adapter: LoraAdapter }> {
  await selectBackend(backend, () => {});
  const model = await loadModel(join(FIXTURES, name));
  return { model, adapter: loadPeftAdapter(join(FIXTURES, name, 'adapter'), model) };
}
