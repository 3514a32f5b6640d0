// Shared setup of the model tests: a Qwen3 smaller than the tiny preset (trains in seconds;
// untied, as init --pretrain writes it) and a temp folder per test file with the wasm backend.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { selectBackend } from '../../model/backend.ts';
import type { Qwen3Config } from '../../model/index.ts';

export const SMALL_CFG: Qwen3Config = {
  vocabSize: 151936,
  hiddenSize: 32,
  intermediateSize: 64,
  numHiddenLayers: 1,
  numAttentionHeads: 2,
  numKeyValueHeads: 1,
  headDim: 16,
  rmsNormEps: 1e-6,
  ropeTheta: 1_000_000,
  tieWordEmbeddings: false,
  maxPositionEmbeddings: 4096,
};

/** Registers beforeAll/afterAll: a fresh temp folder (removed afterwards) and the wasm backend. */
export function modelWorkspace(prefix: string): { path: (name: string) => string; fresh: () => string } {
  let root = '';
  let n = 0;
  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), prefix));
    await selectBackend('wasm', () => {});
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const path = (name: string) => join(root, name);
  return { path, fresh: () => path(`m${++n}`) };
}
