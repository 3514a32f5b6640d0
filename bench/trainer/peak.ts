// The machine's fp32 matmul peak, for achieved-GFLOP/s columns: measured (a large tfjs
// matmul on the current backend) and theoretical (lscpu: cores x GHz x FLOPs per cycle).
import { execFileSync } from 'node:child_process';
import * as tf from '@tensorflow/tfjs';

/** Best of 3 [n, n] x [n, n] fp32 matmuls on the current backend, GFLOP/s. */
export function matmulPeak(n: number): number {
  const [a, b] = [tf.randomNormal([n, n]), tf.randomNormal([n, n])];
  let best = 0;
  for (let i = 0; i < 4; i++) {
    const t0 = performance.now();
    const c = tf.matMul(a, b);
    c.dataSync();
    if (i > 0) best = Math.max(best, (2 * n ** 3) / ((performance.now() - t0) / 1e3) / 1e9);
    c.dispose();
  }
  tf.dispose([a, b]);
  return best;
}

/**
 * Theoretical fp32 peak from lscpu: cores x GHz x 2 FMA ports x lanes x 2. AVX-512: 16
 * lanes; AVX2: 8. The wasm SIMD128 line is what tfjs-backend-wasm can reach: 4 lanes and
 * no FMA in the baseline SIMD proposal (mul + add on 2 ports: 8 FLOPs/cycle).
 */
export function cpuPeak(): { native: number; wasm: number; text: string } {
  const out = execFileSync('lscpu', { encoding: 'utf8' });
  const field = (k: string) => out.match(new RegExp(`^${k}:\\s*(.+)$`, 'm'))?.[1]?.trim() ?? '';
  const cores = Number(field('CPU\\(s\\)'));
  const mhz = Number(field('CPU max MHz')) || Number(field('BogoMIPS')) / 2; // KVM guests often report no MHz
  const flags = field('Flags').split(/\s+/);
  const lanes = flags.includes('avx512f') ? 16 : flags.includes('avx2') ? 8 : 4;
  const ghz = mhz / 1000;
  const native = cores * ghz * 2 * lanes * 2;
  const wasm = cores * ghz * 8;
  return {
    native,
    wasm,
    text: `${native.toFixed(0)} GFLOP/s native (${cores} cores x ${ghz.toFixed(2)} GHz x 2 FMA x ${lanes} lanes x 2), ${wasm.toFixed(0)} GFLOP/s for wasm SIMD128 (4 lanes, no FMA: 8 FLOPs/cycle/core)`,
  };
}
