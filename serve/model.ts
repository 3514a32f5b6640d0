// What the server needs from a language model, kept small so the engine, sampling and HTTP
// layers can be read (and tested) apart from tfjs. `tfjs-model.ts` implements it over the
// trainer's Qwen3 model (trainer/model/), the same code the trainer scores with (SPEC §9).

/** A loaded LoRA adapter; disposed by the registry once no request uses it. */
export interface AdapterHandle {
  dispose(): void;
}

/** One sequence's KV cache: `feed` appends ids and returns the logits of the last position. */
export interface Sequence {
  /** Tokens in the cache so far. */
  readonly length: number;
  /** [V] logits over the full id space (-Infinity for ids the model cannot emit). */
  feed(ids: readonly number[]): Float32Array;
  dispose(): void;
}

export interface ServeModel {
  /** Size of the id space the logits cover. */
  readonly vocabSize: number;
  /** Longest prompt + completion the model accepts (config.json max_position_embeddings). */
  readonly maxContext: number;
  /** Ids the logits can be finite at, ascending (a trimmed vocabulary); undefined = scan the logits. */
  readonly support?: Int32Array;
  /** Where the weights came from (shown as `root` in /v1/models). */
  readonly dir: string;
  newSequence(adapter: AdapterHandle | null): Sequence;
  loadAdapter(dir: string): Promise<AdapterHandle>;
  dispose(): void;
}
