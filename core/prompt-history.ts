// The HISTORY section of the policy's user message (rollout/prompt.ts renderPolicyInput writes
// it: a "HISTORY:" line, then per past turn a `[k] ACTION: execute` line and indented observation
// lines) as text to count and shorten: the SFT length budget (data/sft/budget.ts; method §7.8)
// leaves its oldest entries out. Here, below both, so the trainer reads no environment file.
/**
 * The user message with the `drop` oldest HISTORY entries left out and a line saying how many
 * (the length-budget rule of SFT examples): an entry is its
 * `[k] ACTION: execute` line and the observation lines under it; the kept entries keep their
 * numbers, so the policy still reads which turn each was. `drop` >= the number of entries
 * leaves none. Text without a HISTORY section is returned as it is.
 */
export function trimHistory(content: string, drop: number): string {
  const lines = content.split('\n');
  const at = lines.indexOf('HISTORY:');
  if (at < 0 || drop <= 0) return content;
  const starts = lines.flatMap((l, i) => (i > at && /^\[\d+\] /.test(l) ? [i] : []));
  if (starts.length === 0) return content;
  const n = Math.min(drop, starts.length);
  const from = n < starts.length ? (starts[n] as number) : lines.findIndex((l, i) => i > (starts[starts.length - 1] as number) && !l.startsWith('  '));
  const tail = from < 0 ? [] : lines.slice(from);
  return [...lines.slice(0, at + 1), `(${n} earlier action${n === 1 ? '' : 's'} omitted)`, ...tail].join('\n');
}

/** How many HISTORY entries a user message holds (what trimHistory can leave out). */
export const historyEntries = (content: string): number => {
  const lines = content.split('\n');
  const at = lines.indexOf('HISTORY:');
  return at < 0 ? 0 : lines.filter((l, i) => i > at && /^\[\d+\] /.test(l)).length;
};
