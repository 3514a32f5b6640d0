// How the embedded build words a target (data/build/README.md "Phrasing"): the description g_i
// from a rubric criterion, and the seed question q_seed from the description. Rubric criteria
// are written about the report ("Aligns the plan with the user's main financial goal",
// "Suggests physical activity that builds on current exercise habits"); a target names the
// user-side factor ("the user's main financial goal", "current exercise habits"), and the
// question asks the user about it in the second person.
//   description: drop a leading "The report should" / condition clause ("If ..., ") / rubric
//     verb ("Considers", "Accounts for" ...); "<verb> X to|with|around|into Y" (aligns, matches,
//     fits, tailors, adapts, links, ties) -> Y; "X that|which <verb> (on|to|with) Y" (matches,
//     fits, builds on, suits, reflects, respects) -> Y; a capital first letter, no end stop.
//   question: the user in the second person ("the user's" -> "your", "the user prefers" -> "you
//     prefer"); a description that is an embedded question (who, whether, how, what ...) becomes
//     "Could you tell me <it>?"; otherwise a trailing "when|while <...ing> ..." purpose is cut,
//     a leading "the" becomes "your" (not before an "of" phrase: "the age of the building"),
//     and it is "Could you tell me about <it>?".
const lead = /^(?:the report should\s+|it should\s+|should\s+)/i;
const CONDITION = /^(if|when|once|where|given|depending on)\b[^,]*,\s*/i;
const OPENERS =
  /^(accounts? for|takes? into account|respects?|considers?|reflects?|addresses|covers|includes|recommends|suggests|proposes|presents|cites|uses|keeps within|keeps|builds on|prioriti[sz]es|explains|discusses|mentions|ensures|focuses on)\s+/i;
const MAPPERS = /^(?:aligns?|matches|fits|tailors|adapts|links|ties|connects|relates)\s+.+?\s+(?:to|with|around|into)\s+(.+)$/i;
const RELATIVE = /^.+?\s+(?:that|which)\s+(?:matches|fits|builds on|suits|reflects|respects|accommodates|works with|works around)\s+(.+)$/i;
/** The opener alone when nothing maps: "Matches the main workloads" -> "the main workloads". */
const BARE_MAPPER = /^(?:aligns? with|matches|fits|tailors to|adapts to|suits)\s+/i;

const capital = (s: string) => (s ? s[0]!.toUpperCase() + s.slice(1) : s);
const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();

/** The target description of a criterion (see the file comment). */
export function describe(criterion: string): string {
  let d = oneLine(criterion)
    .replace(lead, '')
    .replace(CONDITION, '')
    .replace(/[.;]+$/, '');
  const mapped = MAPPERS.exec(d) ?? null;
  if (mapped) d = mapped[1] as string;
  else {
    d = d.replace(OPENERS, '');
    const rel = RELATIVE.exec(d);
    if (rel) d = rel[1] as string;
    else d = d.replace(BARE_MAPPER, '');
  }
  return capital(d);
}

const PERSON = /\b(?:the user|the person|the client|the reader|they)\b/gi;
const POSSESSIVE = /\b(?:the user's|the person's|the client's|the reader's|users'|their)\b/gi;
/** Third-person verbs after "you" lose their -s ("you prefers" -> "you prefer"; has/is/does irregular). */
function secondPerson(text: string): string {
  return (
    text
      .replace(POSSESSIVE, 'your')
      .replace(PERSON, 'you')
      .replace(
        /\byou (has|is|does|was)\b/gi,
        (_, v: string) => `you ${({ has: 'have', is: 'are', does: 'do', was: 'were' } as Record<string, string>)[v.toLowerCase()]}`,
      )
      .replace(/\byou ([a-z]+?)(ies)\b/g, 'you $1y')
      .replace(/\byou ([a-z]+(?:ss|sh|ch|x|o))es\b/g, 'you $1')
      .replace(/\byou ([a-z]+[^s\s])s\b/g, 'you $1')
      // a second verb of the same subject: "you own or rents" -> "you own or rent"
      .replace(/\byou ([a-z]+) (or|and) ([a-z]+[^s\s])s\b/g, 'you $1 $2 $3')
  );
}

const QUESTION_WORD = /^(who|whom|whose|whether|how|what|which|when|where|why|if)\b/i;

/** The seed question of a description (see the file comment). */
export function seedQuestion(description: string): string {
  const d = secondPerson(oneLine(description).replace(/[.?;:]+$/, ''));
  const lower = d[0] ? d[0].toLowerCase() + d.slice(1) : d;
  if (QUESTION_WORD.test(lower)) return `Could you tell me ${lower}?`;
  const cut = lower.replace(/\s+(?:when|while)\s+\w+ing\b.*$/i, '');
  // "the total budget" is the user's: "your total budget"; "the age of the building" is not the user's age.
  const core = /\bof\b/i.test(cut) ? cut : cut.replace(/^the\s+/i, 'your ');
  return `Could you tell me about ${core}?`;
}
