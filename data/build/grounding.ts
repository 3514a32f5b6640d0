// The embedded grounding rule (data/build/README.md "Grounding"): which of a user's facts
// (persona lines "key: value" and context snippets) speak to a target, and how strongly. It
// stands in for the paper's LLM step, by meaning as far as words carry it: Porter stems (text.ts)
// and a topic lexicon (topics.ts), weighted so that a rare shared word counts more than a common
// one and the head of a phrase more than its modifier.
//   target   the description's content words, less the task query's stems (the subject of
//            the whole request, "laptop" in "Which laptop should I buy?", tells no target
//            apart); each word weighs 1, or 1/2 when it modifies a head that names a topic
//            ("travel" in "travel budget" is about the budget; "income" in "income stability"
//            keeps 1); its topics weigh as their heaviest word
//   fact     a persona line is about its key's topics (weight 1; the key less the query's
//            words unless nothing else is left: "Laptop budget" is about the budget, "health"
//            about health) and, at VALUE_TOPIC, its value's; a snippet, or a line whose key
//            names no topic ("Notes"), is about its words' topics at SNIPPET_TOPIC
//   score    WORD x sum over shared stems s of idf(s) x weight(s) (half when s is only in the
//            key: "age: 52" says little about "the age of the building"; half again when the
//            fact shares no topic with a target that has one: a coincidence of wording)
//            + TOPIC x sum over shared topics of (target weight x fact weight)
//   idf(s) = ln(1 + F / df(s)) over the user's F facts (df: facts holding s)
// A target is grounded when its best fact scores >= MIN_SCORE; its answer quotes the facts
// scoring >= QUOTE_SHARE of the best (at most RULES.answerFacts, best first, ties fact order).
// The weights were chosen on the labelled check set (tests/fixtures/grounding), where every
// nearby setting scores within one or two items.
import { contentRuns, stemOf, stems } from './text.ts';
import { topicsOf, topicsOfStem } from './topics.ts';

export const GROUNDING = {
  /** A topic the target and the fact share, both by a head word: as strong as a word found in about one fact in two. */
  topic: 1.0,
  /** A keyed fact's value topics count this much (its key says what it is about). */
  valueTopic: 0.5,
  /** A snippet's topics (no key: less sure what it is about). */
  snippetTopic: 0.75,
  /** A shared word counts idf x this. */
  word: 0.75,
  /** Below this the best fact does not speak to the target: ungrounded. */
  minScore: 0.75,
  /** Facts quoted with the best: those within this share of its score. */
  quoteShare: 0.9,
};

/**
 * stem -> weight of each content word of a text, the query's left out: 1, or (with `modifiers`)
 * 1/2 for a word before the last of its phrase when that head names a topic.
 */
function wordWeights(text: string, query: ReadonlySet<string>, modifiers: boolean): Map<string, number> {
  const out = new Map<string, number>();
  for (const run of contentRuns(text)) {
    const st = run.map(stemOf).filter((s) => !query.has(s));
    const head = st[st.length - 1];
    const headNames = head !== undefined && topicsOfStem(head).length > 0;
    st.forEach((s, i) => out.set(s, Math.max(out.get(s) ?? 0, i === st.length - 1 || !headNames || !modifiers ? 1 : 0.5)));
  }
  return out;
}

/** topic -> weight: the largest weight of a word naming it. */
function topicWeights(words: ReadonlyMap<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [s, w] of words) for (const t of topicsOfStem(s)) out.set(t, Math.max(out.get(t) ?? 0, w));
  return out;
}

interface FactWords {
  /** stem -> weight in the fact's value (the whole snippet when it has no key). */
  value: Map<string, number>;
  /** stems only its key has. */
  keyOnly: Set<string>;
  /** topic -> weight: what the fact is about (its key's topics weigh 1, its value's by word). */
  topics: Map<string, number>;
}

const KEY = /^([^:]{1,40}):\s+(.*)$/s;
const minus = (a: ReadonlySet<string>, b: ReadonlySet<string>) => new Set([...a].filter((x) => !b.has(x)));

function factWords(text: string, query: ReadonlySet<string>): FactWords {
  const m = KEY.exec(text);
  const value = wordWeights(m ? (m[2] as string) : text, new Set(), false);
  const topics = topicWeights(value);
  if (!m) {
    for (const [t, w] of topics) topics.set(t, w * GROUNDING.snippetTopic);
    return { value, keyOnly: new Set(), topics };
  }
  const key = stems(m[1] as string);
  const own = minus(key, query);
  const about = topicsOf(own.size ? own : key);
  const scale = about.size ? GROUNDING.valueTopic : GROUNDING.snippetTopic; // "Notes: ..." reads like a snippet
  for (const [t, w] of topics) topics.set(t, w * scale);
  for (const t of about) topics.set(t, 1);
  return { value, keyOnly: new Set([...minus(key, query)].filter((s) => !value.has(s))), topics };
}

export interface Grounded {
  /** Fact indices quoted in the answer, best first. */
  quoted: number[];
  best: number;
}

/** Scores targets against one user's facts (persona lines, then context snippets). */
export class FactGrounding {
  private readonly facts: FactWords[];
  private readonly idf = new Map<string, number>();
  private readonly queryStems: Set<string>;

  constructor(facts: readonly string[], query: string) {
    this.queryStems = stems(query);
    this.facts = facts.map((f) => factWords(f, this.queryStems));
    const df = new Map<string, number>();
    for (const f of this.facts) for (const s of new Set([...f.value.keys(), ...f.keyOnly])) df.set(s, (df.get(s) ?? 0) + 1);
    for (const [s, n] of df) this.idf.set(s, Math.log(1 + this.facts.length / n));
  }

  /** score(t, f) for every fact, in fact order ([F]). */
  scores(targetText: string): number[] {
    const t = wordWeights(targetText, this.queryStems, true);
    const tTopics = topicWeights(t);
    return this.facts.map((f) => {
      let words = 0;
      for (const [s, w] of t) {
        const inValue = f.value.get(s);
        if (inValue !== undefined) words += GROUNDING.word * (this.idf.get(s) ?? 0) * w * inValue;
        else if (f.keyOnly.has(s)) words += GROUNDING.word * (this.idf.get(s) ?? 0) * w * 0.5;
      }
      let topics = 0;
      for (const [x, w] of tTopics) topics += GROUNDING.topic * w * (f.topics.get(x) ?? 0);
      // A word in common with a fact about none of the target's topics is a coincidence of
      // wording ("aged 15" for "the age of the building"): it counts half.
      const coherent = topics > 0 || tTopics.size === 0;
      return (coherent ? words : words / 2) + topics;
    });
  }

  /** The text a target is read as: its description, or with its criterion when the description names no topic. */
  readAs(description: string, criterion: string): string {
    return topicWeights(wordWeights(description, this.queryStems, false)).size ? description : `${description} ${criterion}`;
  }

  /**
   * The facts an answer quotes (empty: ungrounded), at most `max`. `description` is read; when
   * its words name no topic ("How the user prefers to get around"), the criterion it came from
   * is read instead ("Suggests transport that matches ...").
   */
  ground(description: string, criterion: string, max: number): Grounded {
    const sc = this.scores(this.readAs(description, criterion));
    const best = Math.max(0, ...sc);
    if (best < GROUNDING.minScore) return { quoted: [], best };
    const quoted = sc
      .map((s, i) => ({ s, i }))
      .filter((x) => x.s >= GROUNDING.quoteShare * best)
      .sort((a, b) => b.s - a.s || a.i - b.i)
      .slice(0, max)
      .map((x) => x.i);
    return { quoted, best };
  }
}
