// One sequence's constraint: xgrammar's matcher for the compiled grammar, and the policy
// filter when the spec asks for it. gsteer serve asks it for each position's mask before
// sampling; the trainer's replay (replay.ts) asks the same questions over recorded ids.
//
// The rule both sides share (`allowedIds`): the ids a position may sample, and the ones
// its masked log-softmax runs over, are mask ∩ support, where mask = xgrammar's bitmask with
// the filter's bans cleared, and support = the ids with a finite logit (a trimmed model's
// kept ids; every id for a full vocabulary). The matcher and the filter work in the
// vocabulary's index space (vocab.ts: a trimmed model's rows, so support is every index);
// this class takes and returns token ids, and idMask turns an index-space mask into one
// over token ids (what the trainer's masks are, model/token-masks.ts).
import type { CompiledConstraint } from './compile.ts';
import { policyMinTokens } from './turn/caps.ts';
import { bitIndices, hasBit } from '../util/bits.ts';
import { PolicyTurnFilter } from './policy-filter.ts';
import { REFINER_MIN_TOKENS, RefinerTurnFilter } from './refiner-filter.ts';
import type { TokenVocab } from './vocab.ts';

/** A token filter run after xgrammar's mask (policy-filter.ts, refiner-filter.ts). */
interface TokenFilter {
  apply(mask: Int32Array): void;
  applyPerId(mask: Int32Array): void;
  accept(index: number): void;
}

/** The filter a spec names, for a request's max_tokens (null: none). */
function filterFor(spec: CompiledConstraint['spec'], vocab: TokenVocab, maxTokens: number): TokenFilter | null {
  if (spec.type !== 'grammar' || !spec.filter) return null;
  const min = spec.filter === 'policy_turn' ? policyMinTokens() : REFINER_MIN_TOKENS;
  if (maxTokens < min) throw new Error(`internal: max_tokens ${maxTokens} is below the ${spec.filter} filter's minimum ${min}`);
  return spec.filter === 'policy_turn' ? new PolicyTurnFilter(vocab, maxTokens) : new RefinerTurnFilter(vocab, maxTokens);
}
import type { GrammarMatcher } from './xgrammar.ts';

export interface ConstraintOptions {
  /** The request's max_tokens (the token filter keeps the turn inside it). */
  maxTokens: number;
  /** The policy filter id by id as before issue 22 (PolicyTurnFilter.applyPerId; same masks): the benches' baseline. */
  perIdFilter?: boolean;
}

/** Is bit `id` set in a bitmask [ceil(V / 32)] (bit id & 31 of word id >> 5)? */
export const maskHas = hasBit;

/** The ids of `support` (ascending; null = all ids below `size`) whose bit is set in `mask`. */
export function allowedIds(mask: Int32Array, support: Int32Array | null, size: number): Int32Array {
  if (support) {
    const out = new Int32Array(support.length);
    let n = 0;
    for (let i = 0; i < support.length; i++) {
      const id = support[i] as number;
      if (((mask[id >>> 5] as number) >>> (id & 31)) & 1) out[n++] = id;
    }
    return out.subarray(0, n);
  }
  return bitIndices(mask, size);
}

export class TokenConstraint {
  private done = false;

  private constructor(
    readonly compiled: CompiledConstraint,
    private readonly matcher: GrammarMatcher,
    private readonly filter: TokenFilter | null,
    private readonly perId: boolean,
  ) {}

  static async create(compiled: CompiledConstraint, opts: ConstraintOptions): Promise<TokenConstraint> {
    const { spec, vocab } = compiled;
    const filter = filterFor(spec, vocab, opts.maxTokens);
    compiled.retain();
    try {
      const matcher = await compiled.xg.GrammarMatcher.createGrammarMatcher(compiled.grammar, [...vocab.stopIds]);
      return new TokenConstraint(compiled, matcher, filter, opts.perIdFilter ?? false);
    } catch (e) {
      compiled.release();
      throw e;
    }
  }

  /**
   * This position's mask over the vocabulary's index space [ceil(vocab.size / 32)]:
   * xgrammar's bitmask AND the filter. A fresh array (idMask: over token ids).
   */
  async nextMask(): Promise<Int32Array> {
    const mask = await this.matcher.getNextTokenBitmask();
    if (this.perId) this.filter?.applyPerId(mask);
    else this.filter?.apply(mask);
    return mask;
  }

  /** The token ids this position may sample, ascending (every index of the vocabulary is one the model can emit). */
  async allowed(): Promise<Int32Array> {
    const { vocab } = this.compiled;
    const at = allowedIds(await this.nextMask(), null, vocab.size);
    const ids = vocab.ids;
    if (ids) for (let k = 0; k < at.length; k++) at[k] = ids[at[k] as number] as number;
    return at;
  }

  /** Is token `id` in an index-space mask of this constraint's vocabulary? */
  has(mask: Int32Array, id: number): boolean {
    const i = this.compiled.vocab.indexOf(id);
    return i >= 0 && maskHas(mask, i);
  }

  /** An index-space mask as a bitmask over token ids [ceil(vocab.idSpace / 32)]; the same array for a full vocabulary. */
  idMask(mask: Int32Array): Int32Array {
    const { ids, idSpace } = this.compiled.vocab;
    if (!ids) return mask;
    const out = new Int32Array(Math.ceil(idSpace / 32));
    for (const i of allowedIds(mask, null, ids.length)) {
      const id = ids[i] as number;
      out[id >>> 5] = (out[id >>> 5] as number) | (1 << (id & 31));
    }
    return out;
  }

  /** Advance past token `id`; false (state unchanged) when the grammar refuses it or the vocabulary lacks it. */
  accept(id: number): boolean {
    const i = this.compiled.vocab.indexOf(id);
    if (i < 0 || !this.matcher.acceptToken(i)) return false;
    this.filter?.accept(i);
    return true;
  }

  /** The grammar has accepted its stop token (EOS). */
  isTerminated(): boolean {
    return this.matcher.isTerminated();
  }

  dispose(): void {
    if (this.done) return;
    this.done = true;
    this.matcher.dispose();
    this.compiled.release();
  }
}
