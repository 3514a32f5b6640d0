// Shared by bench/serve/grammar.ts and bench/trainer/mask-replay.ts: the demo's SFT examples
// (real policy prompts and turns, `gsteer sft build` run into a temp dir) and a per-token
// timing of the constraint's parts over recorded completions.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChatMessage } from '../../core/tokenizer.ts';
import type { CompiledConstraint } from '../../structured/compile.ts';
import { allowedIds, maskHas } from '../../structured/constraint.ts';
import { PolicyTurnFilter } from '../../structured/policy-filter.ts';
import { qwen3Vocab, type TokenVocab } from '../../structured/vocab.ts';

export interface SftExample {
  input: ChatMessage[];
  target: string;
}

/** n examples spread over the demo's SFT file (first turns and later ones). */
export function sftExamples(n: number): SftExample[] {
  const dir = mkdtempSync(join(tmpdir(), 'gsteer-bench-sft-'));
  try {
    const out = join(dir, 'examples.jsonl');
    const args = ['cli/gsteer.mjs', 'sft', 'build', '--data', 'data/demo/instances.jsonl', '--out', out, '--config', 'configs/demo.yaml'];
    const r = spawnSync(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit'] });
    if (r.status !== 0) throw new Error(`gsteer sft build exited ${r.status}`);
    const lines = readFileSync(out, 'utf8').trim().split('\n');
    return Array.from({ length: n }, (_, i) => JSON.parse(lines[Math.floor((i * lines.length) / n)] as string) as SftExample);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The baseline of issue 22's compact vocabularies: a trimmed model's constraint over the whole
 * Qwen3 id space, ids it cannot emit as "" (never allowed by xgrammar), as gsteer compiled it
 * before: the same masks over 4,748 words instead of the rows' few.
 */
export function idSpaceVocab(kept: Int32Array): TokenVocab {
  const full = qwen3Vocab();
  const keep = new Uint8Array(full.size);
  for (const id of kept) keep[id] = 1;
  const none = new Uint8Array(0);
  return {
    ...full,
    key: `${full.key}-id-space-${kept.length}`,
    encoded: full.encoded.map((s, id) => (keep[id] ? s : '')),
    stopIds: full.stopIds.filter((id) => keep[id]),
    bytes: (id) => (keep[id] ? full.bytes(id) : none),
  };
}

export interface Parts {
  maskMs: number; // xgrammar's bitmask
  filterMs: number; // the policy filter
  allowedMs: number; // allowed-id extraction (what gsteer serve samples from)
  acceptMs: number; // advancing the matcher and the filter past the sampled token
  tokens: number;
}

/**
 * Time the constraint's parts per token over recorded completions (token ids; replayed in the
 * vocabulary's index space, what a decode step or a replay does), with the filter on bitmask
 * words (`apply`) or id by id as before issue 22 (`applyPerId`).
 */
export async function replayParts(
  compiled: CompiledConstraint,
  vocab: TokenVocab,
  completions: number[][],
  maxTokens: number,
  filter: 'apply' | 'applyPerId',
): Promise<Parts> {
  const p: Parts = { maskMs: 0, filterMs: 0, allowedMs: 0, acceptMs: 0, tokens: 0 };
  for (const ids of completions) {
    const m = await compiled.xg.GrammarMatcher.createGrammarMatcher(compiled.grammar, [...vocab.stopIds]);
    const f = new PolicyTurnFilter(vocab, maxTokens);
    for (const id of ids.map((t) => vocab.indexOf(t))) {
      let t = performance.now();
      const mask = await m.getNextTokenBitmask();
      p.maskMs += performance.now() - t;
      t = performance.now();
      f[filter](mask);
      p.filterMs += performance.now() - t;
      t = performance.now();
      allowedIds(mask, null, vocab.size);
      p.allowedMs += performance.now() - t;
      if (!maskHas(mask, id)) throw new Error(`internal: the replay refused id ${id}`);
      t = performance.now();
      const ok = m.acceptToken(id);
      f.accept(id);
      p.acceptMs += performance.now() - t;
      if (!ok) throw new Error(`internal: the replay refused id ${id}`);
      p.tokens++;
    }
    m.dispose();
  }
  return p;
}
