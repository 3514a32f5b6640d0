// QREF records (issue 23; the QREF paper, method §13): the corpus a search backend indexes, the
// questions (one search step of an agent each: the paper's (x, tau_t, Q_t) plus the evidence
// that step needs), and the refiner demonstrations for SFT (the paper's (x_i, tau_i, Q_i,
// o_i^ref) with o^ref = (rationale rho_i, refined batch Q~_i)). One JSON object per line; the
// format is described for users in data/qref/README.md. Cross-record rules (unique ids,
// evidence ids in the corpus, the turn caps, a demonstration matching its question) are
// checked by data/qref/validate.ts.
import { z } from 'zod';

/** At least one non-whitespace character. */
const nonBlank = z.string().regex(/\S/, 'must contain a non-space character');
/** One line: the refiner's turn format is line-based (structured/qref/turn.ts). */
const query = nonBlank.regex(/^[^\n\r]*$/, 'must be one line (no line break)');

/** A document of the local corpus: what the embedded BM25 index and the evidence filter read. */
export const CorpusDocSchema = z
  .object({
    id: nonBlank, // unique in the corpus; the web version is the URL
    title: nonBlank,
    text: nonBlank, // the snippet or passage the agent would see
  })
  .strict();
export type CorpusDoc = z.output<typeof CorpusDocSchema>;

export const QREF_SPLITS = ['train', 'test'] as const;

/** One search step of an agent: the refiner's input and the evidence the step must recover. */
export const QuestionSchema = z
  .object({
    id: nonBlank,
    split: z.enum(QREF_SPLITS),
    question: nonBlank, // x, the original question
    answer: nonBlank.optional(), // the gold answer, for people and for downstream evaluation
    /** The corpus documents this search step needs (the required evidence of the reward). */
    evidenceIds: z.array(nonBlank).min(1),
    /** tau_t, the agent's reasoning before this search (the preceding <think> block); may be empty. */
    trace: z.string(),
    /** Q_t, the agent's candidate query batch, as parsed from its search call. */
    batch: z.array(query).min(1),
  })
  .strict();
export type Question = z.output<typeof QuestionSchema>;

/** A distilled refinement for SFT: the refiner's input and its target output. */
export const DemonstrationSchema = z
  .object({
    id: nonBlank,
    /** The question record this demonstration refines, when there is one (then the inputs must match it). */
    questionId: nonBlank.optional(),
    split: z.enum(QREF_SPLITS),
    question: nonBlank,
    trace: z.string(),
    batch: z.array(query).min(1),
    rationale: query, // rho, one line
    refined: z.array(query).min(1), // Q~, the refined batch
  })
  .strict();
export type Demonstration = z.output<typeof DemonstrationSchema>;

/** Bounds of a refiner turn (configs/qref.ts `turn`); demonstrations are held to them too. */
export interface TurnCaps {
  maxQueries: number;
  maxQueryChars: number;
  maxRationaleChars: number;
}
