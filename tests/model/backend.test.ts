// Backend selection: wasm and cpu initialize offline; a native backend whose package is not
// installed fails with install instructions; auto picks the best available. Tests about an
// absent package are skipped (and reported as skipped) where that package is installed.
import { createRequire } from 'node:module';
import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { selectBackend } from '../../model/backend.ts';

const present = (pkg: string) => {
  try {
    createRequire(import.meta.url).resolve(pkg);
    return true;
  } catch {
    return false;
  }
};
const hasGpu = present('@tensorflow/tfjs-node-gpu');
const hasNode = present('@tensorflow/tfjs-node');

describe('selectBackend', () => {
  it('selects wasm and cpu', async () => {
    expect(await selectBackend('wasm', () => {})).toBe('wasm');
    expect(tf.getBackend()).toBe('wasm');
    expect(await selectBackend('cpu', () => {})).toBe('cpu');
  });

  it.skipIf(hasGpu)('gpu fails with install instructions when @tensorflow/tfjs-node-gpu is absent', async () => {
    await expect(selectBackend('gpu', () => {})).rejects.toThrow(
      /@tensorflow\/tfjs-node-gpu is not installed; install it with npm i .*CUDA 11\.2 and cuDNN 8\.1/,
    );
  });

  it.skipIf(hasNode)('node fails with install instructions when @tensorflow/tfjs-node is absent', async () => {
    await expect(selectBackend('node', () => {})).rejects.toThrow(
      /@tensorflow\/tfjs-node is not installed; install it with npm i --save-exact @tensorflow\/tfjs-node@4\.22\.0/,
    );
  });

  it.skipIf(hasGpu || hasNode)('auto picks wasm when no native backend is installed, and logs it', async () => {
    const lines: string[] = [];
    expect(await selectBackend('auto', (l) => lines.push(l))).toBe('wasm');
    expect(lines.join('\n')).toMatch(/tfjs backend "wasm" \(auto picked wasm; order gpu > node > wasm > cpu\)/);
  });

  // tfjs-node runs on any CPU; tfjs-node-gpu alone may be installed without CUDA (auto then falls back).
  it.skipIf(!hasNode)('auto picks the native tensorflow backend where tfjs-node is installed', async () => {
    const lines: string[] = [];
    expect(await selectBackend('auto', (l) => lines.push(l))).toBe('tensorflow');
    expect(lines.join('\n')).toMatch(/tfjs backend "tensorflow" \(auto picked (gpu|node)/);
  });
});
