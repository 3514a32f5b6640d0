// What the server needs from a language model, kept small so the engine, sampling and HTTP
// layers can be read (and tested) apart from tfjs. `tfjs-model.ts` implements it over the
// trainer's Qwen3 model (model/), the same code the trainer scores with (method §9).

/** A loaded LoRA adapter; disposed by the registry once no request uses it. */
export interface AdapterHandle {
  dispose(): void;
}

/** One sequence's KV cache. */
export interface Sequence {
  /** Tokens in the cache so far. */
  readonly length: number;
  /** Append ids in one forward pass of this sequence alone; the last position's logits over `support` [S] (the interleaved scheduler). */
  feed(ids: readonly number[]): Float32Array;
  dispose(): void;
}

/** A copy of a range of positions of a sequence's KV cache (what the prefix cache keeps). */
export interface KvBlock {
  readonly length: number;
  readonly bytes: number;
  dispose(): void;
}

/** One sequence's part of a batched forward pass. */
export interface StepItem {
  seq: Sequence;
  /** Appended at positions seq.length, seq.length + 1, ... */
  ids: readonly number[];
  /** Return the logits of the last new position. */
  logits: boolean;
}

export interface ServeModel {
  /** Size of the id space the logits cover. */
  readonly vocabSize: number;
  /** Longest prompt + completion the model accepts (config.json max_position_embeddings). */
  readonly maxContext: number;
  /**
   * The ids logits are given for, ascending: a trimmed vocabulary's kept ids, else all ids.
   * Logits are rows [S] over these (contiguous: sampling reads each value several times).
   */
  readonly support: Int32Array;
  /** Where the weights came from (shown as `root` in /v1/models). */
  readonly dir: string;
  /** The compute backend, and whether its batched rows are bitwise independent of each other (serve/README.md). */
  readonly backend: { name: string; batchInvariant: boolean };
  newSequence(adapter: AdapterHandle | null): Sequence;
  /**
   * One forward pass over several sequences (each with its own adapter). Attention is cut at
   * the multiples of `blockSize` positions, so a position range computes the same numbers
   * however it is split over steps. Returns logits over `support` [S] per item that asks for
   * them, null for the others.
   */
  forward(items: readonly StepItem[], blockSize: number): (Float32Array | null)[];
  /** Copy positions [start, end) of a sequence's cache. */
  saveBlock(seq: Sequence, start: number, end: number): KvBlock;
  /** Append blocks, in order, after a sequence's last position. */
  extend(seq: Sequence, blocks: readonly KvBlock[]): void;
  loadAdapter(dir: string): Promise<AdapterHandle>;
  dispose(): void;
}
