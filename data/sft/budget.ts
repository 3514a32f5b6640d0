// The SFT length budget (method §7.8): an example whose tokens (prompt ++ target ++ <|im_end|>,
// counted with the Qwen3 tokenizer as training encodes them) exceed sft.maxSeqLen is never cut
// silently. The rule: the target stays whole (it is what is learned); the oldest HISTORY entries
// of the prompt are left out first, one at a time, with a line saying how many
// (core/prompt-history.ts trimHistory), until the example fits; an example that does not fit even
// with no history left is dropped. `gsteer sft build` and `gsteer sft train` count every case per
// action kind (RETRIEVE, ASK, STOP; chat examples: TURN) and print it.
import { historyEntries, trimHistory } from '../../core/prompt-history.ts';
import type { ChatMessage, Tokenizer } from '../../core/tokenizer.ts';
import { IM_END_ID, renderChatML } from '../../core/tokenizer.ts';

export type BudgetFate = 'fits' | 'trimmed' | 'dropped';

export interface Fitted {
  fate: BudgetFate;
  /** The messages trained on (the prompt, trimmed when the fate is `trimmed`). */
  input: ChatMessage[];
  promptIds: number[];
  targetIds: number[]; // target ++ <|im_end|>
  /** Tokens before any trim, and how many history entries were left out. */
  untrimmed: number;
  dropped: number;
}

const encodePrompt = (tok: Tokenizer, input: readonly ChatMessage[]) => tok.encode(renderChatML(input, true));

/** Fit one example into `maxSeqLen` tokens by the rule above (`trim: false`, sft.overBudget drop: no trimming). */
export function fitExample(tok: Tokenizer, input: readonly ChatMessage[], target: string, maxSeqLen: number, trim = true): Fitted {
  const targetIds = [...tok.encode(target), IM_END_ID];
  let promptIds = encodePrompt(tok, input);
  const untrimmed = promptIds.length + targetIds.length;
  if (untrimmed <= maxSeqLen) return { fate: 'fits', input: [...input], promptIds, targetIds, untrimmed, dropped: 0 };
  const u = input.findLastIndex((m) => m.role === 'user');
  const entries = u < 0 || !trim ? 0 : historyEntries((input[u] as ChatMessage).content);
  for (let drop = 1; drop <= entries; drop++) {
    const trimmed = input.map((m, i) => (i === u ? { ...m, content: trimHistory(m.content, drop) } : m));
    promptIds = encodePrompt(tok, trimmed);
    if (promptIds.length + targetIds.length <= maxSeqLen) return { fate: 'trimmed', input: trimmed, promptIds, targetIds, untrimmed, dropped: drop };
  }
  return { fate: 'dropped', input: [...input], promptIds, targetIds, untrimmed, dropped: entries };
}

/** Counts per action kind, and the length distributions the budgets are read from. */
export class BudgetCounts {
  readonly byKind = new Map<string, Record<BudgetFate, number>>();
  /** Untrimmed example lengths (prompt + target + <|im_end|>) and turn lengths (target + <|im_end|>). */
  readonly lengths: number[] = [];
  readonly turnLengths: number[] = [];

  constructor(
    readonly maxSeqLen: number,
    readonly maxTokens: number | null = null,
    readonly trim = true,
  ) {}

  add(kind: string, f: Fitted): void {
    const k = this.byKind.get(kind) ?? { fits: 0, trimmed: 0, dropped: 0 };
    k[f.fate]++;
    this.byKind.set(kind, k);
    this.lengths.push(f.untrimmed);
    this.turnLengths.push(f.targetIds.length);
  }

  get total(): Record<BudgetFate, number> {
    const t = { fits: 0, trimmed: 0, dropped: 0 };
    for (const k of this.byKind.values()) for (const f of ['fits', 'trimmed', 'dropped'] as const) t[f] += k[f];
    return t;
  }
}

/** The q-quantile (nearest rank) of `xs`; NaN when empty. */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] as number;
}

const pct = (n: number, d: number) => (d ? `${((100 * n) / d).toFixed(1)}%` : '-');

/** The table `sft build` and `sft train` print. */
export function formatBudget(c: BudgetCounts): string {
  const n = c.lengths.length;
  const within = c.lengths.filter((x) => x <= c.maxSeqLen).length;
  const lines = [
    `length budget (Qwen3 tokens): sft.maxSeqLen ${c.maxSeqLen}: ${within} of ${n} examples fit whole (${pct(within, n)}); lengths p50 ${quantile(c.lengths, 0.5)} p99 ${quantile(c.lengths, 0.99)} max ${Math.max(0, ...c.lengths)}`,
    c.trim
      ? '  over budget: the target is kept whole, the oldest history entries are left out until it fits; dropped = no fit even with no history'
      : '  over budget: left out (sft.overBudget drop)',
  ];
  for (const [kind, k] of [...c.byKind].sort(([a], [b]) => a.localeCompare(b))) {
    const all = k.fits + k.trimmed + k.dropped;
    lines.push(
      `  ${kind.padEnd(9)} ${String(all).padStart(7)} examples: over budget ${String(k.trimmed + k.dropped).padStart(6)} (${pct(k.trimmed + k.dropped, all)}), trimmed ${k.trimmed}, dropped ${k.dropped}`,
    );
  }
  if (c.maxTokens !== null) {
    const turns = c.turnLengths.filter((x) => x <= (c.maxTokens as number)).length;
    lines.push(
      `turn lengths (target + <|im_end|>): rollout.maxTokens ${c.maxTokens}: ${turns} of ${n} fit (${pct(turns, n)}); p50 ${quantile(c.turnLengths, 0.5)} p99 ${quantile(c.turnLengths, 0.99)} max ${Math.max(0, ...c.turnLengths)}`,
    );
  }
  return lines.join('\n');
}
