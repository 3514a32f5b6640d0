// Which parts a process runs: the real ones (model, simulator, reward) or the synthetic ones
// the orchestration tests use (GSTEER_PARTS=synthetic). Loaded lazily so a process imports
// only the implementation it runs.
import type { RunConfig } from '../configs/schema.ts';
import type { Parts } from './parts.ts';

export function partsKind(): 'real' | 'synthetic' {
  const v = process.env.GSTEER_PARTS ?? 'real';
  if (v !== 'real' && v !== 'synthetic') throw new Error(`GSTEER_PARTS=${v}: expected "real" or "synthetic"`);
  return v;
}

/** `callsFile`: where the real parts record their LLM calls (RUN_DIR/llm_calls.jsonl). */
export async function loadParts(cfg: RunConfig, runId: string, callsFile?: string): Promise<Parts> {
  if (partsKind() === 'synthetic') return (await import('./synthetic/parts.ts')).syntheticParts(cfg, runId, callsFile);
  return (await import('./real-parts.ts')).realParts(cfg, runId, callsFile);
}
