// The embedded rule-based memory judge (method §6). Each criterion of method §6.2 is stood for by one
// documented heuristic, checked in this order (the first failure is the reason recorded):
//   covered only        -> status must be 'covered' at the end            ('not_covered')
//   not sensitive       -> no SENSITIVE pattern in name/purpose/value     ('sensitive')
//   not assistant advice-> no ADVICE phrase in the value                  ('assistant_advice')
//   user-specific       -> the value is not a stock GENERIC phrase and not made only of
//                          generic words                                  ('generic')
//   useful later        -> no TEMPORARY marker (today, this week, ...)    ('temporary')
//   not in profile      -> source is not 'profile', not every content word is already in
//                          the profile, and encoder cosine of "purpose: value" to every
//                          profile sentence < PROFILE_SIMILARITY          ('in_profile')
//   directly supported  -> >= half of the value's content words occur in what the user said
//     (no weak            (answers) or what memory returned in THIS trajectory; a word
//      inference)          matches on equality or a shared 4-letter prefix ('unsupported')
// Profile sentence (at most one): the first kept slot that is a durable, broadly reusable
// pattern: its name already exists in the user's memory from ANOTHER instance (the same
// decision recurred across tasks), or its value carries a DURABLE marker (always, usually,
// prefers, ...). The sentence is "{Purpose}: {value}.".
import { cosine, type Encoder } from '../core/encoder.ts';
import { policyProfile } from './prompt.ts';
import { evidenceTexts, type JudgeInput, type JudgeReason, type JudgeVerdict, type MemoryJudge } from './memory-judge.ts';
import { contentWords } from './retrieval.ts';
import type { EvidenceSlot } from '../core/types.ts';

/** Cosine above which "purpose: value" counts as already said by a profile sentence. */
export const PROFILE_SIMILARITY = 0.75;
/** Share of the value's content words that must occur in the trajectory's evidence. */
export const SUPPORT_FRACTION = 0.5;

const SENSITIVE: RegExp[] = [
  // health diagnoses
  /\b(diagnos\w*|disease|diabetes|cancer|depression|anxiety disorder|adhd|autism|hiv|pregnan\w*|disabilit\w*|medication|mental illness|chronic illness)\b/i,
  // religion
  /\b(religio\w*|muslim|christian|catholic|jewish|hindu|buddhist|atheist|church|mosque|synagogue)\b/i,
  // sexuality
  /\b(gay|lesbian|bisexual|homosexual|heterosexual|sexual orientation|transgender)\b/i,
  // politics and ethnicity
  /\b(political party|voted for|ethnicity|ethnic origin)\b/i,
  // precise address
  /\b\d+\s+\w+\s+(street|st|road|rd|avenue|ave|lane|ln|boulevard|blvd)\b/i,
  /\b(apartment|apt\.?)\s*\d+|\b(postcode|postal code|zip code)\b/i,
  // identity, account and card numbers
  /\b(passport|social security|ssn|national id|credit card|iban|bank account|phone number)\b/i,
  /\d{8,}/,
];
const ADVICE =
  /\b(you should|you could|you might|i would recommend|i recommend|i suggest|we suggest|recommended|consider|it is (best|better|advisable)|make sure|try to)\b/i;
const TEMPORARY =
  /\b(today|tonight|tomorrow|yesterday|this (week|weekend|morning|afternoon|evening|month)|next (week|weekend)|right now|at the moment|for now|currently|temporarily|this time)\b/i;
const DURABLE = /\b(always|usually|generally|in general|typically|every|never|prefers?|preferred)\b/i;
const GENERIC_PHRASES = new Set([
  'any',
  'anything',
  'none',
  'n/a',
  'na',
  'unknown',
  'not sure',
  'unsure',
  'no preference',
  'no particular preference',
  "doesn't matter",
  'does not matter',
  'depends',
  'it depends',
  'whatever',
  'standard',
  'normal',
  'yes',
  'no',
  'ok',
  'okay',
  'fine',
  'good',
  'general',
  'flexible',
  'open',
  'various',
  'tbd',
]);
const GENERIC_WORDS = new Set([
  'any',
  'anything',
  'none',
  'unknown',
  'sure',
  'unsure',
  'preference',
  'particular',
  'matter',
  'depends',
  'whatever',
  'standard',
  'normal',
  'general',
  'good',
  'fine',
  'flexible',
  'various',
  'typical',
  'usual',
  'things',
  'stuff',
  'etc',
]);

const norm = (s: string) =>
  s
    .toLowerCase()
    .replace(/[.!?,;:]+$/g, '')
    .trim();
const wordsMatch = (a: string, b: string) => a === b || (a.length >= 4 && b.length >= 4 && a.slice(0, 4) === b.slice(0, 4));

/** Share of the value's content words found (by wordsMatch) in the evidence; 0 for a value without content words. */
export function supportFraction(value: string, evidence: readonly string[]): number {
  const v = [...contentWords(value)];
  if (!v.length) return 0;
  const e = [...new Set(evidence.flatMap((t) => [...contentWords(t)]))];
  return v.filter((w) => e.some((x) => wordsMatch(w, x))).length / v.length;
}

export function isGeneric(value: string): boolean {
  if (GENERIC_PHRASES.has(norm(value))) return true;
  const w = [...contentWords(value)];
  return w.length === 0 || w.every((x) => GENERIC_WORDS.has(x));
}

export function profileSentences(profile: string): string[] {
  return profile
    .split(/(?<=[.!?])\s+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

const capitalize = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

export class RuleJudge implements MemoryJudge {
  constructor(private readonly encoder: Encoder) {}

  async judge({ instance, trajectory, snapshot }: JudgeInput): Promise<JudgeVerdict> {
    const evidence = evidenceTexts(trajectory);
    const profile = policyProfile(instance, snapshot.profile);
    const sentences = profileSentences(profile);
    const profileWords = contentWords(profile);
    const sentenceVecs = sentences.length ? await this.encoder.embed(sentences) : [];
    const slots = trajectory.finalSlots;
    const slotVecs = slots.length ? await this.encoder.embed(slots.map((s) => `${s.purpose}: ${s.value}`)) : [];

    const inProfile = (s: EvidenceSlot, i: number) =>
      s.source === 'profile' ||
      [...contentWords(s.value)].every((w) => profileWords.has(w)) ||
      sentenceVecs.some((v) => cosine(v, slotVecs[i] as Float32Array) >= PROFILE_SIMILARITY);

    const reasonFor = (s: EvidenceSlot, i: number): JudgeReason => {
      if (s.status !== 'covered') return 'not_covered';
      if (SENSITIVE.some((re) => re.test(`${s.name} ${s.purpose} ${s.value}`))) return 'sensitive';
      if (ADVICE.test(s.value)) return 'assistant_advice';
      if (isGeneric(s.value)) return 'generic';
      if (TEMPORARY.test(s.value)) return 'temporary';
      if (inProfile(s, i)) return 'in_profile';
      if (supportFraction(s.value, evidence) < SUPPORT_FRACTION) return 'unsupported';
      return 'kept';
    };
    const verdicts = slots.map((slot, i) => ({ slot, reason: reasonFor(slot, i) }));

    const durable = verdicts.find(
      ({ slot, reason }) =>
        reason === 'kept' &&
        (DURABLE.test(slot.value) || snapshot.memories.some((m) => m.name === slot.name && m.sourceInstance !== undefined && m.sourceInstance !== instance.id)),
    );
    const profileSentence = durable ? `${capitalize(durable.slot.purpose)}: ${durable.slot.value.replace(/[.!?]+$/, '')}.` : null;
    return { verdicts, profileSentence };
  }
}
