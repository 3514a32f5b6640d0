// Pretraining sequences from SFT examples (data/sft/README.md format): the same ids as the
// SFT stage (trainer/sft/tokens.ts: ChatML prompt ++ target ++ <|im_end|>, loss on the target
// and <|im_end|>), optionally with the prompt cut to its last `context` tokens so a
// sequence costs little more than its target (the tail still holds the generation cue
// "<|im_start|>assistant\n<think>\n\n</think>\n\n"). Either examples format trains: G-STEER step
// examples or generic chat examples (QREF refiner demonstrations, trainer/sft/tokens.ts).
import type { SftExample } from '../../data/sft/example.ts';
import { heldOutMask, promptKey, readTrainableExamples, tokenizeExample, type TrainableExample } from '../sft/tokens.ts';
import { InputError } from '../../util/errors.ts';
import { Rng } from '../../util/rng.ts';
import type { Tokenizer } from '../../core/tokenizer.ts';
import type { PretrainBatch } from './loss.ts';
import type { Qwen3Model } from '../../model/model.ts';
import { augmentExample, valueWords } from './augment.ts';
import { areRefinerExamples, augmentRefinerExample, isRefinerExample, refinerNameWords } from './augment-qref.ts';
import { copyDrill, drillContext, type DrillShape } from './copy-drill.ts';
import { idsToRows } from '../../model/vocab-map.ts';

export interface PretrainSequence {
  ids: number[];
  /** Index of the first target token in ids (loss on ids[start..]). */
  start: number;
}

export interface SequenceOptions {
  /** Prompt tokens kept before the target; null = the whole prompt. */
  context: number | null;
  /** Longer sequences are left out (counted). */
  maxLen: number;
  /** The SFT held-out split (heldOutMask, as `gsteer sft`): held-out steps are not trained on. */
  splitSeed: number;
  heldOutFraction: number;
  /**
   * More SFT examples to train on (e.g. built with more optional-target ratios): every step
   * whose prompt the main file does not have, once. A prompt the main file holds out stays
   * unseen; for a prompt it trains on, its own target stands (the same turn-1 prompt with
   * or without optional targets would otherwise teach two answers to one prompt).
   */
  extra?: string | null;
}

/** One example as a training sequence (the prompt cut to `context` tokens), or null when longer than maxLen. */
export function toSequence(tok: Tokenizer, ex: TrainableExample, index: number, o: Pick<SequenceOptions, 'context' | 'maxLen'>): PretrainSequence | null {
  const t = tokenizeExample(tok, ex, index);
  const cut = o.context === null ? 0 : Math.max(0, t.promptLength - o.context);
  const ids = t.inputIds.slice(cut);
  return ids.length > o.maxLen ? null : { ids, start: t.promptLength - cut };
}

export interface PretrainData {
  train: PretrainSequence[];
  /** G-STEER step examples (SftExample) or QREF refiner chat examples, one per train sequence. */
  examples: TrainableExample[];
  /** Steps of the main file held out (heldOutMask). */
  heldOut: number;
  tooLong: number;
  /** From `extra`: sequences added; steps left out because the main file holds their prompt out, trains on it, or an earlier extra step is the same. */
  extraAdded: number;
  extraHeldOut: number;
  extraInMain: number;
  extraRepeated: number;
}

const stepKey = (e: Pick<TrainableExample, 'input' | 'target'>) => JSON.stringify([e.input, e.target]);

export function pretrainSequences(tok: Tokenizer, file: string, o: SequenceOptions): PretrainData {
  const out: PretrainSequence[] = [];
  const kept: TrainableExample[] = [];
  let heldOut = 0;
  let tooLong = 0;
  const add = (ex: TrainableExample, i: number): boolean => {
    const seq = toSequence(tok, ex, i, o);
    if (!seq) return (void tooLong++, false);
    out.push(seq);
    kept.push(ex);
    return true;
  };
  const examples = readTrainableExamples(file);
  const held = heldOutMask(examples, o.splitSeed, o.heldOutFraction);
  examples.forEach((ex, i) => (held[i] ? void heldOut++ : add(ex, i)));
  let extraAdded = 0;
  let extraHeldOut = 0;
  let extraInMain = 0;
  let extraRepeated = 0;
  if (o.extra) {
    const heldPrompts = new Set(examples.filter((_, i) => held[i]).map(promptKey));
    const trainPrompts = new Set(examples.filter((_, i) => !held[i]).map(promptKey));
    const seen = new Set<string>();
    readTrainableExamples(o.extra).forEach((ex, i) => {
      const prompt = promptKey(ex);
      if (heldPrompts.has(prompt)) return void extraHeldOut++;
      if (trainPrompts.has(prompt)) return void extraInMain++;
      if (seen.has(stepKey(ex))) return void extraRepeated++;
      seen.add(stepKey(ex));
      if (add(ex, examples.length + i)) extraAdded++;
    });
  }
  if (!out.length)
    throw new InputError(`${file}: no pretraining sequence left (${heldOut} held out, ${tooLong} longer than ${o.maxLen} tokens); raise --pretrain-max-len`);
  return { train: out, examples: kept, heldOut, tooLong, extraAdded, extraHeldOut, extraInMain, extraRepeated };
}

/** The word pool copy augmentation draws from: QREF refiner examples' names, else G-STEER's copied values. */
export function augmentWords(examples: readonly TrainableExample[]): string[] {
  return areRefinerExamples(examples) ? refinerNameWords(examples) : valueWords(examples.filter(isStepExample));
}

const isStepExample = (ex: TrainableExample): ex is SftExample => 'step' in ex;

/** One example with fresh copied values (augment.ts for a G-STEER step, augment-qref.ts for a refiner turn), or null. */
function augmentAny(ex: TrainableExample, words: readonly string[], rng: Rng): TrainableExample | null {
  if (isRefinerExample(ex)) return augmentRefinerExample(ex, words, rng);
  return isStepExample(ex) ? augmentExample(ex, words, rng) : null;
}

/**
 * The sequence update `step` trains on for train[i] (slot `slot` of its batch): with
 * probability `drill` (a draw from Rng.derive(seed, 'pretrain-drill', step, slot)) a copy drill
 * from the name pool (copy-drill.ts; with `drillShape` prompt, set in train[i]'s prompt) in its
 * place; else with probability `augment` (a draw from
 * Rng.derive(seed, 'pretrain-augment', step, slot)) the example with fresh copied values
 * (pretrain-augment.ts), else, or when the drill or the augmented example does not parse, is
 * too long or has a token outside the model's vocabulary, the example itself. Depends on
 * (seed, step, slot) only, so runs stay reproducible; with `drill` 0 nothing is drawn for it.
 */
export function stepSequence(
  tok: Tokenizer,
  model: Qwen3Model,
  data: { train: PretrainSequence[]; examples: TrainableExample[]; words: readonly string[] },
  i: number,
  o: Pick<SequenceOptions, 'context' | 'maxLen'> & { seed: number; augment: number; drill?: number; drillShape?: DrillShape },
  step: number,
  slot: number,
): { seq: PretrainSequence; augmented: boolean; drill?: true } {
  const own = { seq: data.train[i]!, augmented: false };
  // no token the model's trimmed vocabulary lacks, unless the example itself has it (it maps to <unk> in both)
  const ownIds = new Set(own.seq.ids);
  const known = (id: number) => !model.vocab || (model.vocab.rowOf[id] ?? -1) >= 0 || ownIds.has(id);
  const drill = o.drill ?? 0;
  if (drill > 0) {
    const rng = Rng.derive(o.seed, 'pretrain-drill', step, slot);
    if (rng.next() < drill) {
      const seq = toSequence(tok, copyDrill(data.words, rng, o.drillShape === 'prompt' ? drillContext(data.examples[i]!) : undefined), i, o);
      if (seq?.ids.every(known)) return { seq, augmented: false, drill: true };
    }
  }
  if (!(o.augment > 0)) return own;
  const rng = Rng.derive(o.seed, 'pretrain-augment', step, slot);
  if (rng.next() >= o.augment) return own;
  const ex = augmentAny(data.examples[i]!, data.words, rng);
  const seq = ex && toSequence(tok, ex, i, o);
  return seq && seq.ids.every(known) ? { seq, augmented: true } : own;
}

/** The batches of one epoch: a seeded permutation cut into `size` chunks. */
export function pretrainBatches(seed: number, epoch: number, n: number, size: number): number[][] {
  const perm = Rng.derive(seed, 'pretrain-epoch', epoch).shuffle([...Array(n).keys()]);
  const out: number[][] = [];
  for (let s = 0; s < n; s += size) out.push(perm.slice(s, s + size));
  return out;
}

/** Right-pad `seqs` into one batch; weights = 1/#target tokens on the target positions. */
export function makeBatch(model: Qwen3Model, seqs: readonly PretrainSequence[]): PretrainBatch {
  const B = seqs.length;
  const T = Math.max(...seqs.map((s) => s.ids.length));
  const rows = new Int32Array(B * T);
  const weights = new Float32Array(B * (T - 1));
  const n = seqs.reduce((a, s) => a + s.ids.length - s.start, 0);
  seqs.forEach((s, b) => {
    rows.set(idsToRows(model.vocab, s.ids, model.config.vocabSize), b * T);
    // position t predicts token t+1: targets start..len-1 <- positions start-1..len-2
    for (let t = s.start - 1; t < s.ids.length - 1; t++) weights[b * (T - 1) + t] = 1 / n;
  });
  return { rows, weights, B, T, from: Math.max(0, Math.min(...seqs.map((s) => s.start - 1))) };
}
