// One choice of one request: its KV cache, its Rng (seeded by the request seed and the
// choice index), and what it has sampled, so what it samples does not depend on what else
// is in flight. The interleaved scheduler advances it with `step()` (prefill the prompt,
// then feed the last sampled id); the batched one runs the forward pass for many choices
// itself and hands each its logits through `accept()`, which is where a per-choice
// constraint (a grammar mask) belongs.
import { EOS_IDS, type Tokenizer } from '../trainer/tokenizer.ts';
import { Rng } from '../util/rng.ts';
import { Detokenizer } from './detokenizer.ts';
import type { AdapterHandle, Sequence, ServeModel } from './model.ts';
import { logSumExpRow, samplePos, topLogprobsRow, type SamplingParams, type TokenLogprob } from './sampling.ts';

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
}

export type FinishReason = 'stop' | 'length';

export interface ChoiceResult {
  /** Sampled ids, including the terminating EOS / stop id (SPEC §9: the trainer learns to stop). */
  ids: number[];
  /** log_softmax of the raw logits at each sampled id (see sampling.ts). */
  logprobs: number[];
  top: TokenLogprob[][] | null;
  text: string;
  offsets: number[];
  finishReason: FinishReason;
  /** Prompt tokens whose KV came from the prefix cache instead of being computed (0 without one). */
  cachedTokens: number;
}

/** What one decode step produced, for streaming (`text` = newly final text, maybe ''). */
export interface StepEvent {
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
    this.out = { ids: [], logprobs: [], top: spec.topLogprobs > 0 ? [] : null, text: '', offsets: [], finishReason: 'length', cachedTokens: 0 };
  }

  /** One forward step of this choice alone and one sampled token; returns true once the choice is finished. */
  step(): boolean {
    if (this.done) return true;
    const first = this.seq === null;
    return this.accept(this.sequence().feed(first ? this.spec.promptIds : [this.lastId()]));
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
   * Sample one token from the next position's logits over `model.support` [S] (a grammar mask
   * goes here: -Infinity at the positions of ids it forbids); returns true once the choice is finished.
   */
  accept(row: Float32Array): boolean {
    const support = this.model.support;
    const s = samplePos(row, this.spec.sampling, this.rng);
    const id = support[s] as number;
    const logZ = logSumExpRow(row);
    this.out.ids.push(id);
    this.out.logprobs.push((row[s] as number) - logZ);
    this.out.top?.push(topLogprobsRow(row, support, logZ, this.spec.topLogprobs));
    const stopString = this.detok.push(id);
    if (this.stopIds.has(id) || stopString) this.finish('stop');
    else if (this.out.ids.length >= this.spec.maxTokens) this.finish('length');
    this.report(id);
    return this.done;
  }

  /** Set by the batched scheduler once the prompt is in the cache (usage.prompt_tokens_details.cached_tokens). */
  set cachedTokens(n: number) {
    this.out.cachedTokens = n;
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
  }
}
