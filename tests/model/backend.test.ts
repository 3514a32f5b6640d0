// Backend selection: wasm and cpu initialize offline; the native backends, which cannot be
// installed here, fail with install instructions; auto picks the best available.
import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { selectBackend } from '../../model/backend.ts';

const installed = async (pkg: string) => import(/* @vite-ignore */ pkg).then(() => true, () => false);

describe('selectBackend', () => {
  it('selects wasm and cpu', async () => {
    expect(await selectBackend('wasm', () => {})).toBe('wasm');
    expect(tf.getBackend()).toBe('wasm');
    expect(await selectBackend('cpu', () => {})).toBe('cpu');
  });

  it('gpu and node fail with install instructions when the packages are absent', async () => {
    if (!(await installed('@tensorflow/tfjs-node-gpu')))
      await expect(selectBackend('gpu', () => {})).rejects.toThrow(/@tensorflow\/tfjs-node-gpu is not installed; install it with npm i .*CUDA 11\.2 and cuDNN 8\.1/);
    if (!(await installed('@tensorflow/tfjs-node')))
      await expect(selectBackend('node', () => {})).rejects.toThrow(/@tensorflow\/tfjs-node is not installed/);
  });

  it('auto logs its choice: gpu > node > wasm > cpu among those installed', async () => {
    const lines: string[] = [];
    const name = await selectBackend('auto', (l) => lines.push(l));
    const want = (await installed('@tensorflow/tfjs-node-gpu')) || (await installed('@tensorflow/tfjs-node')) ? 'tensorflow' : 'wasm';
    expect(name).toBe(want);
    expect(lines.join('\n')).toMatch(new RegExp(`tfjs backend "${want}"`));
  });
});
