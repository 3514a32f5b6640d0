// The query refiner R_phi as the agent's refiner (types.ts Refiner): the policy being trained
// (or any served refiner), one completion per batch through the policy client (endpoints/
// layer, vLLM's /v1/completions with token ids), on the refiner's prompt (rollout/qref/prompt.ts,
// the text SFT trains on), under the refiner grammar and gsteer serve's `refiner_turn` token
// filter when `constrained` (structured/refiner-filter.ts: every turn ends by max_tokens;
// vLLM ignores the filter and applies the grammar alone). Every turn it samples
// is kept in `turns` (prompt ids, the completion, how it parsed), which the QREF environment
// turns into the trajectory's policy turns. An unparseable or truncated turn is an invalid
// refinement, never a throw; the policy server failing throws, as for every policy call.
import { encodeChat, type Tokenizer } from '../../core/tokenizer.ts';
import type { CompletionResult, PolicyClient } from '../policy-client.ts';
import { refinerMessages, type RefinerInput } from '../qref/prompt.ts';
import { parseRefinerTurn, type RefinerCaps, type RefinerParse } from '../../structured/qref/turn.ts';
import { refinerGrammarEbnf } from '../../structured/qref/turn-ebnf.ts';
import type { Refinement, Refiner } from './types.ts';

export type RefinerTurnParse = RefinerParse | { ok: false; reason: 'truncated' | 'grammar_dead_end'; detail: string };

/** One sampled refiner turn. */
export interface PolicyTurn {
  promptIds: number[];
  res: CompletionResult;
  grammar: string | null;
  parsed: RefinerTurnParse;
}

export interface PolicyRefinerOptions {
  policy: PolicyClient;
  tokenizer: Tokenizer;
  caps: RefinerCaps;
  model: string;
  sampling: { maxTokens: number; temperature: number; topP: number };
  constrained: boolean;
  /** The seed of the k-th turn (k from 1), e.g. rollout/episode.ts turnSeed. */
  seedOf: (turn: number) => number | undefined;
}

/** The parse of a completion, a cut or dead-ended one first. */
export function parseCompletion(res: CompletionResult, caps: RefinerCaps, maxTokens: number): RefinerTurnParse {
  if (res.finishReason === 'length')
    return { ok: false, reason: 'truncated', detail: `no end of turn within max_tokens=${maxTokens} (${res.completionIds.length} tokens sampled)` };
  if (res.finishReason === 'abort')
    return { ok: false, reason: 'grammar_dead_end', detail: `the grammar left no token the model can emit after ${res.completionIds.length} tokens` };
  return parseRefinerTurn(res.text, caps);
}

export class PolicyRefiner implements Refiner {
  readonly turns: PolicyTurn[] = [];
  constructor(private readonly o: PolicyRefinerOptions) {}

  async refine(input: RefinerInput): Promise<Refinement> {
    const { policy, tokenizer, caps, sampling } = this.o;
    const promptIds = encodeChat(tokenizer, refinerMessages(input, caps));
    const grammar = this.o.constrained ? refinerGrammarEbnf(caps.maxQueries) : null;
    const seed = this.o.seedOf(this.turns.length + 1);
    const res = await policy.complete({
      promptIds,
      maxTokens: sampling.maxTokens,
      temperature: sampling.temperature,
      topP: sampling.topP,
      model: this.o.model,
      ...(seed === undefined ? {} : { seed }),
      ...(grammar ? { constraint: { grammar, tokenFilter: 'refiner_turn' as const } } : {}),
    });
    const parsed = parseCompletion(res, caps, sampling.maxTokens);
    this.turns.push({ promptIds, res, grammar, parsed });
    return parsed.ok
      ? { ok: true, rationale: parsed.turn.rationale, queries: parsed.turn.queries }
      : { ok: false, reason: parsed.reason, detail: parsed.detail };
  }
}
