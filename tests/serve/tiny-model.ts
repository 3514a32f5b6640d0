// The tiny Qwen3 checkpoint the serve tests run against, written by the model helper's own
// init code (model/init.ts, as `gsteer model init --preset tiny` does) into a temp
// dir: real config.json + model.safetensors + vocab_map.json, random N(0, 0.02) weights.
// The trimmed vocabulary (byte tokens, specials, and the words of the test prompts) keeps
// each decode step cheap; the context is cut to 256 so the overflow check is easy to hit.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { baseKeptIds, initModel, PRESETS } from '../../model/init.ts';
import { qwen3Tokenizer } from '../../core/tokenizer.ts';

export const TINY_CONTEXT = 256;
const WORDS = 'The quick brown fox jumps over the lazy dog. What should I read about climate policy? Plan a trip to Kyoto. yes no maybe';

/** The ids the tiny model keeps by default: byte tokens, specials, and the words above. */
export function tinyKeptIds(): number[] {
  const tok = qwen3Tokenizer();
  return [...baseKeptIds(), ...tok.encode(WORDS), ...tok.encode(` ${WORDS.toLowerCase()}`)];
}

export function makeTinyModel(seed = 7, keptIds: number[] = tinyKeptIds()): { dir: string; root: string; cleanup(): void } {
  const root = mkdtempSync(join(tmpdir(), 'gsteer-serve-test-'));
  const dir = join(root, 'tiny');
  initModel(dir, { ...(PRESETS.tiny as NonNullable<typeof PRESETS.tiny>), maxPositionEmbeddings: TINY_CONTEXT }, { seed, keptIds });
  return { dir, root, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}
