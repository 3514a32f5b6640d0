// SFT examples -> token ids + loss mask (method §7: cross-entropy on the target tokens only).
// ids = encode(renderChatML(input, addGenerationPrompt = true)) ++ encode(target) ++ [<|im_end|>]
// mask = 0 on the prompt, 1 on the target tokens and the closing <|im_end|> (the policy
// must learn to end its turn). Prompt and target are encoded separately, exactly as the
// policy server sees a prompt and then samples the completion token by token.
import { readJsonl } from '../../util/jsonl.ts';
import { InputError } from '../../util/errors.ts';
import { Rng } from '../../util/rng.ts';
import { IM_END_ID, renderChatML, type Tokenizer } from '../../core/tokenizer.ts';
import { SftExampleSchema, type SftExample } from '../../data/sft/example.ts';
import { ChatSftExampleSchema } from '../../data/chat-sft-example.ts';
import { fitExample, type BudgetCounts } from '../../data/sft/budget.ts';

export interface TokenizedExample {
  /** Position in the examples file (0-based), for metadata and eval sampling. */
  index: number;
  trajectoryId: string;
  inputIds: number[];
  targetMask: number[]; // 0/1, same length as inputIds
  promptLength: number;
}

/** Read and validate an examples JSONL; errors name file, line, field, value and rule. */
export function readSftExamples(file: string): SftExample[] {
  const problems: string[] = [];
  const out: SftExample[] = [];
  for (const rec of readJsonl(file)) {
    const r = SftExampleSchema.safeParse(rec.value);
    if (r.success) out.push(r.data);
    else
      for (const i of r.error.issues.slice(0, 3))
        problems.push(
          `${file}:${rec.line}: ${i.path.join('.') || '(record)'}: ${i.message}; lines must be written by \`gsteer sft build\` (format in data/sft/README.md)`,
        );
  }
  if (problems.length) throw new InputError(problems.slice(0, 20).join('\n'), problems);
  if (out.length === 0) throw new InputError(`${file}: no SFT examples; build some with \`gsteer sft build --data FILE --out ${file}\``);
  return out;
}

/** What the SFT trainer reads of an example: a G-STEER step example (with its action), or a generic chat example (QREF, method §13). */
export type TrainableExample = Pick<SftExample, 'trajectoryId' | 'input' | 'target'> & { action?: SftExample['action'] };

/**
 * An SFT examples file of either format: G-STEER step examples (`gsteer sft build`), or generic
 * chat examples (data/chat-sft-example.ts: id, input, target, meta; each its own "trajectory"
 * for the held-out split). Every line must be of the first line's format.
 */
export function readTrainableExamples(file: string): TrainableExample[] {
  const first = readJsonl(file)[0];
  const chat = first !== undefined && ChatSftExampleSchema.safeParse(first.value).success;
  if (!chat) return readSftExamples(file);
  const problems: string[] = [];
  const out: TrainableExample[] = [];
  for (const rec of readJsonl(file)) {
    const r = ChatSftExampleSchema.safeParse(rec.value);
    if (r.success) out.push({ trajectoryId: r.data.id, input: r.data.input, target: r.data.target });
    else
      for (const i of r.error.issues.slice(0, 3))
        problems.push(
          `${file}:${rec.line}: ${i.path.join('.') || '(record)'}: ${i.message}; a chat SFT example is {id, input: [{role, content}], target, meta} (data/chat-sft-example.ts)`,
        );
  }
  if (problems.length) throw new InputError(problems.slice(0, 20).join('\n'), problems);
  return out;
}

/**
 * The example within the length budget (budget.ts: target whole, oldest history left out first),
 * or null when it cannot fit; `counts` records its fate under its action kind (TURN for chat examples).
 */
export function tokenizeWithin(tok: Tokenizer, ex: TrainableExample, index: number, maxSeqLen: number, counts?: BudgetCounts): TokenizedExample | null {
  const f = fitExample(tok, ex.input, ex.target, maxSeqLen, counts?.trim ?? true);
  counts?.add(ex.action ?? 'TURN', f);
  if (f.fate === 'dropped') return null;
  return {
    index,
    trajectoryId: ex.trajectoryId,
    inputIds: [...f.promptIds, ...f.targetIds],
    targetMask: [...f.promptIds.map(() => 0), ...f.targetIds.map(() => 1)],
    promptLength: f.promptIds.length,
  };
}

export function tokenizeExample(tok: Tokenizer, ex: TrainableExample, index: number): TokenizedExample {
  const prompt = tok.encode(renderChatML(ex.input, true));
  const target = [...tok.encode(ex.target), IM_END_ID];
  return {
    index,
    trajectoryId: ex.trajectoryId,
    inputIds: [...prompt, ...target],
    targetMask: [...prompt.map(() => 0), ...target.map(() => 1)],
    promptLength: prompt.length,
  };
}

/** Two examples have the same prompt when their input messages are equal. */
export const promptKey = (e: Pick<SftExample, 'input'>): string => JSON.stringify(e.input);

/**
 * Held-out split by trajectory (all steps of a trajectory on one side): a trajectory is
 * held out when a uniform draw from Rng.derive(seed, 'sft-split', trajectoryId) falls
 * below `fraction`, so the split depends on nothing but the seed and the id.
 */
export function isHeldOut(seed: number, trajectoryId: string, fraction: number): boolean {
  return Rng.derive(seed, 'sft-split', trajectoryId).next() < fraction;
}

/**
 * Which examples are held out (the one split `gsteer sft train`, `sft eval` and
 * `model pretrain` use): a step of a held-out trajectory (isHeldOut), unless a training
 * trajectory has a step with the same prompt. Orders of one subgraph share their first
 * turns (turn 1 is the same for every order), so without this rule most "held-out" prompts
 * were verbatim training prompts (42 of the demo's 76); such a step is trained on instead,
 * and every held-out prompt is one the model never saw. [N] -> [N] booleans.
 */
export function heldOutMask(examples: readonly Pick<SftExample, 'trajectoryId' | 'input'>[], seed: number, fraction: number): boolean[] {
  const byTrajectory = examples.map((e) => isHeldOut(seed, e.trajectoryId, fraction));
  const trainPrompts = new Set(examples.filter((_, i) => !byTrajectory[i]).map(promptKey));
  return examples.map((e, i) => byTrajectory[i]! && !trainPrompts.has(promptKey(e)));
}

/** The batches of one epoch: a seeded permutation of `n` training examples, cut into `batchSize` chunks. */
export function epochBatches(seed: number, epoch: number, n: number, batchSize: number): number[][] {
  const perm = Rng.derive(seed, 'sft-epoch', epoch).shuffle([...Array(n).keys()]);
  const out: number[][] = [];
  for (let s = 0; s < n; s += batchSize) out.push(perm.slice(s, s + batchSize));
  return out;
}
