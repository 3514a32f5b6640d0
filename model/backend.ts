// Backend selection for the tfjs trainer and server (method §9.7, §14.1). The same model
// code runs on all four; `auto` prefers gpu > node > wasm > cpu among those installed.
// tfjs-node(-gpu) are optional native packages that are not dependencies of gsteer (they
// download libtensorflow at install time), so they are imported dynamically by name
// (util/optional.ts).
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { InputError } from '../util/errors.ts';
import { importOptional } from '../util/optional.ts';

export type BackendKind = 'auto' | 'gpu' | 'node' | 'wasm' | 'cpu';

const NATIVE: Record<'gpu' | 'node', { pkg: string; backend: string; install: string }> = {
  gpu: {
    pkg: '@tensorflow/tfjs-node-gpu',
    backend: 'tensorflow',
    install: 'npm i --save-exact @tensorflow/tfjs-node-gpu@4.22.0 (needs an NVIDIA GPU with CUDA 11.2 and cuDNN 8.1 on the library path)',
  },
  node: {
    pkg: '@tensorflow/tfjs-node',
    backend: 'tensorflow',
    install: 'npm i --save-exact @tensorflow/tfjs-node@4.22.0 (downloads libtensorflow at install time)',
  },
};

async function tryNative(kind: 'gpu' | 'node'): Promise<boolean> {
  const { pkg, backend, install } = NATIVE[kind];
  try {
    if ((await importOptional(pkg)) === null) return false;
  } catch (e) {
    // Installed but its native library does not load (e.g. no CUDA/cuDNN on the path).
    throw new InputError(`trainer.backend=${kind}: ${pkg} is installed but failed to load (${(e as Error).message}); check ${install}`);
  }
  return tf.setBackend(backend);
}

let wasmPathsSet = false;

/** The wasm backend ships its .wasm binaries in the package's dist/ (works offline). */
async function tryWasm(): Promise<boolean> {
  const wasm = await import('@tensorflow/tfjs-backend-wasm');
  if (!wasmPathsSet) {
    const require = createRequire(import.meta.url);
    const distDir = dirname(require.resolve('@tensorflow/tfjs-backend-wasm'));
    // Node reports SIMD but no threads (method §14.1): point all three names at real files.
    wasm.setWasmPaths({
      'tfjs-backend-wasm.wasm': join(distDir, 'tfjs-backend-wasm.wasm'),
      'tfjs-backend-wasm-simd.wasm': join(distDir, 'tfjs-backend-wasm-simd.wasm'),
      'tfjs-backend-wasm-threaded-simd.wasm': join(distDir, 'tfjs-backend-wasm-threaded-simd.wasm'),
    });
    wasmPathsSet = true;
  }
  return tf.setBackend('wasm');
}

async function trySet(kind: Exclude<BackendKind, 'auto'>): Promise<boolean> {
  switch (kind) {
    case 'gpu':
    case 'node':
      return tryNative(kind);
    case 'wasm':
      return tryWasm();
    case 'cpu':
      return tf.setBackend('cpu');
  }
}

/**
 * Select and initialize a tfjs backend; returns the backend name tfjs reports.
 * Asking for a backend that is not installed is an InputError that says how to install it.
 */
export async function selectBackend(kind: BackendKind, log: (line: string) => void = (l) => console.error(l)): Promise<string> {
  if (kind === 'auto') {
    for (const k of ['gpu', 'node', 'wasm', 'cpu'] as const) {
      if (await trySet(k).catch(() => false)) {
        await tf.ready();
        log(`gsteer: tfjs backend "${tf.getBackend()}" (auto picked ${k}; order gpu > node > wasm > cpu)`);
        return tf.getBackend();
      }
    }
    throw new Error('internal: not even the tfjs cpu backend initialized');
  }
  if (kind === 'gpu' || kind === 'node') {
    if (!(await trySet(kind)))
      throw new InputError(
        `trainer.backend=${kind}: ${NATIVE[kind].pkg} is not installed; install it with ${NATIVE[kind].install}, or use trainer.backend=wasm|cpu|auto`,
      );
  } else if (!(await trySet(kind))) {
    throw new InputError(`trainer.backend=${kind}: the tfjs ${kind} backend failed to initialize; try trainer.backend=auto`);
  }
  await tf.ready();
  return tf.getBackend();
}
