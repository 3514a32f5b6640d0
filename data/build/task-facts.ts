// The facts the user simulator gets for one instance (paper, "User Simulator": "the simulator
// receives task-relevant facts from the PDR-Bench persona"; method §3.5). A user's persona lines
// and context snippets cover every task the user has; an instance keeps those that bear on its
// task: a fact is task-relevant when it is one of the persona's identity attributes (name, age,
// gender, occupation, location: they frame every answer), when a seed answer of the instance
// quotes it, or when the grounding rule (grounding.ts) finds it speaking to the query or to one
// of the kept targets (score >= GROUNDING.minScore). The rest (the user's facts for other tasks) stay out of the
// instance, so no simulator sees them. The same rule in both build modes: which facts the
// simulator may draw on is not an annotation the paper assigns to the LLM.
import { FactGrounding, GROUNDING } from './grounding.ts';
import { normalized } from './text.ts';

/** Persona lines naming who the user is: "name: ...", "age: 52", "occupation: ...", "city: ..." ... */
const IDENTITY = /^\s*(?:name|age|gender|sex|occupation|former occupation|job|profession|location|city|country|region)\s*:/i;

export function taskFacts(
  facts: readonly string[],
  query: string,
  targets: readonly { description: string; criterion: string; seedAnswer: string }[],
): string[] {
  const forTargets = new FactGrounding(facts, query);
  const forQuery = new FactGrounding(facts, '');
  const relevant = new Set<number>();
  const answers = targets.map((t) => normalized(t.seedAnswer));
  facts.forEach((f, i) => {
    const text = normalized(f);
    if (IDENTITY.test(f) || (text && answers.some((a) => a.includes(text)))) relevant.add(i);
  });
  const mark = (scores: number[]) => scores.forEach((s, i) => s >= GROUNDING.minScore && relevant.add(i));
  mark(forQuery.scores(query));
  for (const t of targets) mark(forTargets.scores(forTargets.readAs(t.description, t.criterion)));
  return facts.filter((_, i) => relevant.has(i));
}
