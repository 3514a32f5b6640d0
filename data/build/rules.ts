// The embedded default of every build step: documented deterministic rules over the raw
// pair (data/build/README.md has the same rules in prose, with the paper's wording each one
// stands in for). No canned output: every answer is computed from the query, the rubric and
// the user's persona and context.
import { personaLines } from '../persona.ts';
import type { RubricItem } from '../raw/schema.ts';
import { FactGrounding } from './grounding.ts';
import { describe, seedQuestion } from './phrasing.ts';
import { contentWords, jaccard, oneLine, shared, snakeName, stems, uniqueName } from './text.ts';
import type { BuiltTarget, Candidate, Decision, DropReason, Ieg, RawInstance, Seed, Slot } from './types.ts';

/** Knobs of the rules (defaults documented in the README). */
export const RULES = {
  /** essential = the top ceil(essentialShare * N) kept targets by weight (paper Table 5: 3.73 of 8.89 = 0.42). */
  essentialShare: 0.4,
  /** in_query when at least this share of a candidate's stems occur in the query. */
  inQueryShare: 0.75,
  /** redundant when the stem Jaccard with a heavier kept candidate reaches this. */
  redundantJaccard: 0.5,
  /** narrow when it has fewer content stems than this. */
  minStems: 2,
  /** facts quoted in a seed answer. */
  answerFacts: 2,
  /** most parents per target in the IEG. */
  maxParents: 2,
  /** earlier targets quoted in an offline profile summary. */
  profileItems: 3,
};

export { describe } from './phrasing.ts';

const PRESENTATION = /\b(format\w*|headings?|tone|layout|readab\w*|concise|short|length|bullet\w*|table|style)\b/i;
const CONDITIONAL = /\b(if|when|whether|once|depending|given)\b/i;

/**
 * Candidates: each rubric item is one candidate, split at semicolons and sentence breaks
 * (separable decisions); commas, "and", "or" and colons list aspects of one decision and
 * stay merged. Ids c1, c2 ... in rubric order.
 */
export function ruleCandidates(inst: RawInstance): Candidate[] {
  const out: Candidate[] = [];
  inst.rubric.forEach((item, i) => {
    const parts = item.criterion
      .split(/;|(?<=[.!?])\s+(?=[A-Z])/)
      .map(oneLine)
      .filter((p) => contentWords(p).length > 0);
    for (const part of parts.length ? parts : [oneLine(item.criterion)]) {
      out.push({ id: `c${out.length + 1}`, description: describe(part), criterion: part.replace(/[.;]+$/, ''), rubricItems: [i] });
    }
  });
  return out;
}

/**
 * Weights from the rubric: a candidate gets, from each rubric item it comes from, that
 * item's weight divided by the number of candidates citing the item, so split items share
 * their weight and the total is the rubric's (over the candidates).
 */
export function rubricWeights(cands: readonly Candidate[], rubric: readonly RubricItem[]): Map<string, number> {
  const citing = new Map<number, number>();
  for (const c of cands) for (const i of c.rubricItems) citing.set(i, (citing.get(i) ?? 0) + 1);
  return new Map(cands.map((c) => [c.id, c.rubricItems.reduce((a, i) => a + (rubric[i]?.weight ?? 0) / (citing.get(i) ?? 1), 0)]));
}

/** The user's facts, one per line: persona lines then context snippets. */
export function userFacts(inst: RawInstance): string[] {
  return [...personaLines(inst.user.persona), ...inst.user.context.map(oneLine).filter(Boolean)];
}

const candidateText = (c: Candidate) => `${c.description} ${c.criterion}`;

/**
 * Validation, heaviest candidate first (ties: candidate order), first matching rule drops:
 *  superficial  the rubric item is a presentation item (dimension "presentation" or a
 *               format/tone/length word): it does not change research planning
 *  narrow       fewer than RULES.minStems content stems
 *  in_query     >= RULES.inQueryShare of its stems occur in the query (already specified)
 *  redundant    stem Jaccard >= RULES.redundantJaccard with a kept (heavier) candidate
 *  ungrounded   no persona fact or context snippet of this user speaks to it (grounding.ts:
 *               shared words weighted by rarity, shared topics): nothing about this user bears
 *               on it, so its answer does not vary with the user and a seed answer would be
 *               invented
 * Essential: the top ceil(RULES.essentialShare * kept) kept candidates by weight.
 */
export function ruleValidate(inst: RawInstance, cands: readonly Candidate[], weights: ReadonlyMap<string, number>): Decision[] {
  const queryStems = stems(inst.query);
  const grounding = new FactGrounding(userFacts(inst), inst.query);
  const byWeight = [...cands].sort((a, b) => (weights.get(b.id) ?? 0) - (weights.get(a.id) ?? 0));
  const kept: Candidate[] = [];
  const verdict = new Map<string, DropReason | null>();
  for (const c of byWeight) {
    const s = stems(candidateText(c));
    const items = c.rubricItems.map((i) => inst.rubric[i]);
    let reason: DropReason | null = null;
    if (items.some((it) => it?.dimension === 'presentation') || PRESENTATION.test(c.criterion)) reason = 'superficial';
    else if (s.size < RULES.minStems) reason = 'narrow';
    else if (shared(s, queryStems) / s.size >= RULES.inQueryShare) reason = 'in_query';
    else if (kept.some((k) => jaccard(s, stems(candidateText(k))) >= RULES.redundantJaccard)) reason = 'redundant';
    else if (grounding.ground(c.description, c.criterion, RULES.answerFacts).quoted.length === 0) reason = 'ungrounded';
    verdict.set(c.id, reason);
    if (!reason) kept.push(c);
  }
  const nEssential = Math.ceil(RULES.essentialShare * kept.length);
  const essential = new Set(kept.slice(0, nEssential).map((c) => c.id));
  return cands.map((c) => {
    const reason = verdict.get(c.id) ?? null;
    return { id: c.id, keep: reason === null, reason, essential: essential.has(c.id) };
  });
}

/**
 * Seed Q/A: the question asks the user about the description in the second person
 * (phrasing.ts); the answer quotes the facts the grounding rule picks for the target (at most
 * RULES.answerFacts, best first; grounding.ts), after the description:
 * "<Description>: <fact>; <fact>." (empty when no fact speaks to it).
 */
export function ruleSeeds(inst: RawInstance, targets: readonly Pick<BuiltTarget, 'id' | 'description' | 'criterion'>[]): Seed[] {
  const facts = userFacts(inst);
  const grounding = new FactGrounding(facts, inst.query);
  return targets.map((t) => {
    const { quoted } = grounding.ground(t.description, t.criterion, RULES.answerFacts);
    const answer = quoted.length ? `${t.description}: ${quoted.map((i) => (facts[i] as string).replace(/[.;]+$/, '')).join('; ')}.` : '';
    return { id: t.id, seedQuestion: seedQuestion(t.description), seedAnswer: answer };
  });
}

/**
 * IEG: an edge essential -> optional when the optional target's text shares a stem with the
 * essential one's (resolving the heavier decision can change how the lighter one is asked);
 * at most RULES.maxParents parents, the heaviest. Edges only run from essential to optional
 * targets, so the graph is acyclic by construction. Late-activatable: a target with a parent
 * whose criterion is conditional ("if", "when", "whether", "once", "depending", "given").
 */
export function ruleIeg(targets: readonly BuiltTarget[]): Ieg {
  const essentials = targets.filter((t) => t.essential).sort((a, b) => b.weight - a.weight);
  const edges: Ieg['edges'] = [];
  const late: string[] = [];
  for (const c of targets) {
    if (c.essential) continue;
    const s = stems(`${c.description} ${c.criterion}`);
    const parents = essentials.filter((p) => shared(s, stems(`${p.description} ${p.criterion}`)) > 0).slice(0, RULES.maxParents);
    for (const p of parents) edges.push({ parent: p.id, child: c.id });
    if (parents.length && CONDITIONAL.test(c.criterion)) late.push(c.id);
  }
  return { edges, lateActivatable: late };
}

/** Canonical slots: name = snake_case of the description's first three content words (unique: _2 ...), purpose = the description. */
export function ruleSlots(targets: readonly BuiltTarget[]): Slot[] {
  const taken = new Set<string>();
  return targets.map((t) => ({ id: t.id, name: uniqueName(snakeName(t.description), taken), purpose: t.description }));
}

export interface ProfileSource {
  purpose: string;
  value: string;
  weight: number;
}

/**
 * Offline profile summary of one (user, training instance): from the user's OTHER training
 * instances' targets, heaviest first, leave out every one whose value shares two or more
 * stems with a value of the current instance (it would reveal the current target value),
 * and quote the first RULES.profileItems values as one sentence. Empty when none is left.
 */
export function ruleProfile(current: readonly { seedAnswer: string }[], others: readonly ProfileSource[]): string {
  const mine = current.map((t) => stems(t.seedAnswer));
  const keep = [...others]
    .sort((a, b) => b.weight - a.weight)
    .filter((o) => !mine.some((m) => shared(stems(o.value), m) >= 2))
    .slice(0, RULES.profileItems);
  return keep.length ? `From earlier requests: ${keep.map((o) => o.value.replace(/[.;]+$/, '')).join('; ')}.` : '';
}
