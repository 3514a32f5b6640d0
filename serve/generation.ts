// One choice of one request: its KV cache, its Rng (seeded by the request seed and the
// choice index), and what it has sampled, so what it samples does not depend on what else
// is in flight. The interleaved scheduler advances it with `step()` (prefill the prompt,
// then feed the last sampled id); the batched one runs the forward pass for many choices
// itself and hands each its logits through `accept()`.
// A constrained choice (structured outputs) also owns a TokenConstraint: each step samples
// from the allowed ids only (mask ∩ the model's support, structured/constraint.ts), so
// temperature, top-k and top-p act after the mask as in vLLM, and the reported logprobs are
// those of the masked, renormalised distribution (what vLLM reports for a constrained request).
import { EOS_IDS, type Tokenizer } from '../core/tokenizer.ts';
import { Rng } from '../util/rng.ts';
import { Detokenizer } from './detokenizer.ts';
import type { AdapterHandle, Sequence, ServeModel } from './model.ts';
import { logSumExpRow, samplePos, subRow, topLogprobsRow, type SamplingParams, type TokenLogprob } from './sampling.ts';
import type { CompiledConstraint } from '../structured/compile.ts';
import { TokenConstraint } from '../structured/constraint.ts';

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
  /** Sampled ids, including the terminating EOS / stop id (method §9: the trainer learns to stop). */
  ids: number[];
  /** log_softmax at each sampled id: of the raw logits, or over the allowed ids when constrained. */
  logprobs: number[];
  top: TokenLogprob[][] | null;
  text: string;
  offsets: number[];
  finishReason: FinishReason;
  /** vLLM's stop_reason: null, or DEAD_END. */
  stopReason: string | null;
  /** Prompt tokens whose KV came from the prefix cache instead of being computed (0 without one). */
  cachedTokens: number;
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
  /** Wall time (s) of the last accept()'s constraint work (its mask and the matcher's advance); null when it did none. */
  constraintSeconds: number | null = null;
  /** Wall time (s) of the last step()'s forward pass. */
  forwardSeconds = 0;

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
    this.out = {
      ids: [],
      logprobs: [],
      top: spec.topLogprobs > 0 ? [] : null,
      text: '',
      offsets: [],
      finishReason: 'length',
      stopReason: null,
      cachedTokens: 0,
    };
  }

  /** One forward step of this choice alone and one sampled token; resolves true once the choice is finished. */
  async step(): Promise<boolean> {
    if (this.done) return true;
    const first = this.seq === null;
    const t0 = performance.now();
    const row = this.sequence().feed(first ? this.spec.promptIds : [this.lastId()]);
    this.forwardSeconds = (performance.now() - t0) / 1000;
    return this.accept(row);
  }

  /** This choice's KV cache (made on first use; freed when the choice ends). */
  sequence(): Sequence {
    this.seq ??= this.model.newSequence(this.adapter);
    return this.seq;
  }

  /** The adapter the choice decodes with (null = base model). */
  get adapterHandle(): AdapterHandle | null {
    return this.adapter;
  }

  /** The id sampled last (what the next decode step feeds). */
  lastId(): number {
    return this.out.ids[this.out.ids.length - 1] as number;
  }

  /**
   * Sample one token from the next position's logits, a row over `model.support` [S]
   * (owned by this call: the batched scheduler awaits every sequence's accept() together);
   * resolves true once the choice is finished.
   */
  async accept(row: Float32Array): Promise<boolean> {
    this.constraintSeconds = null;
    if (this.done) return true;
    if (this.spec.constraint && !this.constraint) this.constraint = await TokenConstraint.create(this.spec.constraint, { maxTokens: this.spec.maxTokens });
    if (this.done) return true; // cancelled meanwhile
    let ids = this.model.support; // [S]
    let t0 = 0;
    if (this.constraint) {
      t0 = performance.now();
      const allowed = await this.constraint.allowed(); // [S'] mask ∩ support (the constraint's vocabulary is the model's)
      this.constraintSeconds = (performance.now() - t0) / 1000;
      if (this.done) return true;
      if (!allowed.length) return this.deadEnd();
      row = subRow(row, ids, allowed);
      ids = allowed;
    }
    const s = samplePos(row, this.spec.sampling, this.rng);
    const id = ids[s] as number;
    const logZ = logSumExpRow(row);
    this.out.ids.push(id);
    this.out.logprobs.push((row[s] as number) - logZ);
    this.out.top?.push(topLogprobsRow(row, ids, logZ, this.spec.topLogprobs));
    if (this.constraint) {
      t0 = performance.now();
      if (!this.constraint.accept(id)) throw new Error(`internal: the grammar refused id ${id}, which its own mask allowed`);
      this.constraintSeconds = (this.constraintSeconds ?? 0) + (performance.now() - t0) / 1000;
    }
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
    this.onStep({
      id,
      logprob: this.out.logprobs[t] as number,
      top,
      textOffset: this.detok.offsets[t] as number,
      text: delta,
      finishReason: this.done ? this.out.finishReason : null,
    });
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

  /** Set by the batched scheduler once the prompt is in the cache (usage.prompt_tokens_details.cached_tokens). */
  set cachedTokens(n: number) {
    this.out.cachedTokens = n;
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
