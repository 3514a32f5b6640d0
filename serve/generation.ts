// One choice of one request, advanced one decode step at a time by the scheduler: the
// first step prefills the prompt into this sequence's KV cache, each later step feeds the
// last sampled id. Every choice owns its cache and its Rng (seeded by the request seed and
// the choice index), so what it samples does not depend on what else is in flight.
// A constrained choice (structured outputs) also owns a TokenConstraint: each step samples
// from the allowed ids only (mask ∩ finite ids, structured/constraint.ts), so temperature,
// top-k and top-p act after the mask as in vLLM, and the reported logprobs are those of the
// masked, renormalised distribution (what vLLM reports for a constrained request).
import { EOS_IDS, type Tokenizer } from '../trainer/tokenizer.ts';
import { Rng } from '../util/rng.ts';
import { Detokenizer } from './detokenizer.ts';
import type { AdapterHandle, Sequence, ServeModel } from './model.ts';
import { finiteIds, logSumExp, sampleToken, topLogprobs, type SamplingParams, type TokenLogprob } from './sampling.ts';
import type { CompiledConstraint } from './structured/compile.ts';
import { TokenConstraint } from './structured/constraint.ts';

export interface ChoiceSpec {
  promptIds: number[];
  maxTokens: number;
  sampling: SamplingParams;
  seed: number;
  choiceIndex: number;
  stop: string[];
  stopTokenIds: number[];
  ignoreEos: boolean;
  /** How many top alternatives to report per position (0 = none). */
  topLogprobs: number;
  /** The request's compiled structured-outputs constraint (absent/null: unconstrained). */
  constraint?: CompiledConstraint | null;
}

/** vLLM's values; 'abort' here = the grammar left no token to sample (stopReason says so). */
export type FinishReason = 'stop' | 'length' | 'abort';

/** stop_reason of a choice whose constraint allowed no token (finish_reason 'abort'). */
export const DEAD_END = 'grammar_dead_end';

export interface ChoiceResult {
  /** Sampled ids, including the terminating EOS / stop id (SPEC §9: the trainer learns to stop). */
  ids: number[];
  /** log_softmax at each sampled id: of the raw logits, or over the allowed ids when constrained. */
  logprobs: number[];
  top: TokenLogprob[][] | null;
  text: string;
  offsets: number[];
  finishReason: FinishReason;
  /** vLLM's stop_reason: null, or DEAD_END. */
  stopReason: string | null;
}

/** What one decode step produced, for streaming (`text` = newly final text, maybe ''). */
export interface StepEvent {
  /** The sampled id; -1 for the last event of a choice that ended without one (a dead end). */
  id: number;
  logprob: number;
  top: TokenLogprob[] | null;
  textOffset: number;
  text: string;
  finishReason: FinishReason | null;
}

export class Generation {
  private seq: Sequence | null = null;
  private readonly rng: Rng;
  private readonly detok: Detokenizer;
  private readonly stopIds: Set<number>;
  private readonly out: ChoiceResult;
  private readonly holdBack: number; // chars a stop string could still claim
  private sent = 0; // chars of text already reported to the listener
  private constraint: TokenConstraint | null = null;
  done = false;

  constructor(
    private readonly model: ServeModel,
    private readonly adapter: AdapterHandle | null,
    tok: Tokenizer,
    readonly spec: ChoiceSpec,
    private readonly onStep?: (ev: StepEvent) => void,
  ) {
    this.holdBack = Math.max(0, ...spec.stop.map((s) => s.length - 1));
    // The high bits go in as a label so seeds 2^32 apart do not share a stream.
    this.rng = Rng.derive(spec.seed >>> 0, Math.floor(spec.seed / 2 ** 32), 'choice', spec.choiceIndex);
    this.detok = new Detokenizer(tok, spec.stop);
    this.stopIds = new Set([...(spec.ignoreEos ? [] : EOS_IDS), ...spec.stopTokenIds]);
    this.out = { ids: [], logprobs: [], top: spec.topLogprobs > 0 ? [] : null, text: '', offsets: [], finishReason: 'length', stopReason: null };
  }

  /** One forward step and one sampled token; resolves true once the choice is finished. */
  async step(): Promise<boolean> {
    if (this.done) return true;
    if (this.spec.constraint && !this.constraint) this.constraint = await TokenConstraint.create(this.spec.constraint, { maxTokens: this.spec.maxTokens });
    if (this.done) return true; // cancelled meanwhile
    const first = this.seq === null;
    this.seq ??= this.model.newSequence(this.adapter);
    const logits = this.seq.feed(first ? this.spec.promptIds : [this.out.ids[this.out.ids.length - 1] as number]); // [V]
    let support = this.model.support ?? finiteIds(logits); // [S] ids with finite logits
    if (this.constraint) {
      support = await this.constraint.allowed(support); // [S'] mask ∩ finite ids
      if (this.done) return true;
      if (!support.length) return this.deadEnd();
    }
    const id = sampleToken(logits, this.spec.sampling, this.rng, support);
    const logZ = logSumExp(logits, support);
    this.out.ids.push(id);
    this.out.logprobs.push((logits[id] as number) - logZ);
    this.out.top?.push(topLogprobs(logits, logZ, this.spec.topLogprobs, support));
    if (this.constraint && !this.constraint.accept(id)) throw new Error(`internal: the grammar refused id ${id}, which its own mask allowed`);
    const stopString = this.detok.push(id);
    if (this.stopIds.has(id) || stopString) this.finish('stop');
    else if (this.out.ids.length >= this.spec.maxTokens) this.finish('length');
    this.report(id);
    return this.done;
  }

  /**
   * Streams the text that is final: while running, the last (longest stop - 1) characters
   * are held back, since a stop string completing later would cut them (so streamed text
   * always equals the final `text`).
   */
  private report(id: number): void {
    if (!this.onStep) return;
    const t = this.out.ids.length - 1;
    const text = this.detok.text;
    const upTo = Math.max(this.sent, this.done ? text.length : text.length - this.holdBack);
    const delta = text.slice(this.sent, upTo);
    this.sent = upTo;
    const top = this.out.top?.[t] ?? null;
    this.onStep({ id, logprob: this.out.logprobs[t] as number, top, textOffset: this.detok.offsets[t] as number, text: delta, finishReason: this.done ? this.out.finishReason : null });
  }

  /** No id is allowed: end the choice without sampling (finish_reason 'abort', stop_reason DEAD_END). */
  private deadEnd(): true {
    this.finish('abort');
    this.out.stopReason = DEAD_END;
    this.onStep?.({ id: -1, logprob: 0, top: null, textOffset: this.detok.text.length, text: this.detok.text.slice(this.sent), finishReason: 'abort' });
    return true;
  }

  private finish(reason: FinishReason): void {
    this.done = true;
    this.out.finishReason = reason;
    this.out.text = this.detok.text;
    this.out.offsets = this.detok.offsets;
    this.dispose();
  }

  result(): ChoiceResult {
    return this.out;
  }

  /** Stop early (the client went away, the server is closing) and free the cache. */
  cancel(): void {
    this.done = true;
    this.dispose();
  }

  private dispose(): void {
    this.seq?.dispose();
    this.seq = null;
    this.constraint?.dispose();
    this.constraint = null;
  }
}
