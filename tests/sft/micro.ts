// A micro Qwen3 (random init, 1 layer, d = 16, vocabulary trimmed to the tokens used) and
// a short hand-made examples file, so SFT tests run a real model in a second or two.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initModel, baseKeptIds, PRESETS } from '../../model/init.ts';
import { qwen3Tokenizer } from '../../core/tokenizer.ts';
import { tokenizeExample } from '../../trainer/sft/tokens.ts';
import { renderTurn } from '../../structured/turn/grammar.ts';

function exampleLines(): string[] {
  const lines: string[] = [];
  for (let i = 0; i < 12; i++) {
    const action = i % 2 ? 'RETRIEVE' : 'ASK';
    const target = renderTurn({
      state: [{ name: `slot${i % 3}`, purpose: 'budget', status: 'uncovered', value: '', source: 'memory' }],
      plan: `check memory for slot${i % 3}`,
      action,
      execute: i % 2 ? 'budget' : 'What is your budget?',
    });
    lines.push(
      JSON.stringify({
        instanceId: `i${i % 4}`,
        userId: 'u',
        trajectoryId: `i${i % 4}/s0/o${i % 3}/dialogue`,
        kind: 'dialogue',
        step: 0,
        steps: 1,
        action,
        input: [{ role: 'user', content: `QUERY: trip ${i % 4}, request ${i}` }],
        target,
      }),
    );
  }
  return lines;
}

export function makeMicro(prefix: string): { root: string; modelDir: string; examples: string } {
  const root = mkdtempSync(join(tmpdir(), prefix));
  const examples = join(root, 'examples.jsonl');
  const lines = exampleLines();
  writeFileSync(examples, `${lines.join('\n')}\n`);
  const tok = qwen3Tokenizer();
  const kept = new Set(baseKeptIds());
  lines.forEach((l, i) => tokenizeExample(tok, JSON.parse(l), i).inputIds.forEach((id) => kept.add(id)));
  const modelDir = join(root, 'micro');
  const cfg = { ...PRESETS.tiny!, hiddenSize: 16, intermediateSize: 32, numHiddenLayers: 1, numAttentionHeads: 2, numKeyValueHeads: 1, headDim: 8 };
  initModel(modelDir, cfg, { seed: 3, keptIds: [...kept] });
  return { root, modelDir, examples };
}
