// The refiner's turn (issue 23; the QREF paper, method §13: R_phi outputs a short rationale rho_t
// and the refined batch Q~_t). The text the refiner emits, the SFT target, and what the
// environment parses:
//
//   RATIONALE: the queries repeat the bridge; search the engineer's birthplace instead
//   QUERIES:
//   - Amos Kell engineer born
//   - Amos Kell Marrowby
//
// Rules (each failure is a RefinerInvalidReason):
// - RATIONALE: first, one non-empty line (`missing_rationale`, `empty_rationale`); then
//   QUERIES: with nothing after it on its line; then 1..maxQueries lines "- {query}", each
//   with a non-space character (`missing_queries`, `no_queries`, `empty_query`,
//   `too_many_queries`). Headers are upper-case and start their line.
// - Tolerated as in the G-STEER turn (structured/turn/grammar.ts, whose whitespace rules and
//   trimField this reuses): trailing ASCII whitespace (CRLF too) and blank lines anywhere.
//   Anything else is `unexpected_line`; an all-blank output is `empty`.
// - Lengths, in code points: rationale <= maxRationaleChars, each query <= maxQueryChars
//   (`rationale_too_long`, `query_too_long`).
// Repeated queries are allowed: redundancy is the reward's business (it costs a query and
// adds no evidence), not a format error.
//
// The grammar (turn-ebnf.ts) says all of this except the lengths: counted repetitions for
// them made xgrammar's compile over the Qwen3 vocabulary take 66 s (rationale {0,240},
// queries {0,120}) and 28 s (queries only) against 1.0 s without (bench/qref/grammar-compile.ts,
// 2 cores), so lengths are checked here and,
// for constrained sampling, are to be capped by a token filter as structured/policy-filter.ts
// does for the G-STEER turn. Hence: grammar-accepted => parse ok or a *_too_long reason.
import { FIELD_SPACE, trimField } from '../turn/grammar.ts';

export interface RefinerTurn {
  rationale: string;
  queries: string[];
}

export const REFINER_INVALID_REASONS = [
  'empty',
  'missing_rationale',
  'empty_rationale',
  'missing_queries',
  'no_queries',
  'empty_query',
  'too_many_queries',
  'unexpected_line',
  'rationale_too_long',
  'query_too_long',
] as const;
export type RefinerInvalidReason = (typeof REFINER_INVALID_REASONS)[number];
export type RefinerParse = { ok: true; turn: RefinerTurn } | { ok: false; reason: RefinerInvalidReason; detail: string };

export const RATIONALE_HEADER = 'RATIONALE:';
export const QUERIES_HEADER = 'QUERIES:';
export const QUERY_BULLET = '- ';

export interface RefinerCaps {
  maxQueries: number;
  maxQueryChars: number;
  maxRationaleChars: number;
}

/** One line with single spaces (what the renderer writes). */
const oneLine = (s: string) => trimField(s.replace(/[ \t\n\v\f\r]+/g, ' '));
const trimLineEnd = (s: string) => {
  let end = s.length;
  while (end > 0 && FIELD_SPACE.includes(s[end - 1] as string)) end--;
  return s.slice(0, end);
};
const chars = (s: string) => [...s].length;

/** The canonical text of a turn (the SFT target). */
export function renderRefinerTurn(t: RefinerTurn): string {
  return [`${RATIONALE_HEADER} ${oneLine(t.rationale)}`, QUERIES_HEADER, ...t.queries.map((q) => `${QUERY_BULLET}${oneLine(q)}`)].join('\n');
}

class Invalid {
  constructor(
    readonly reason: RefinerInvalidReason,
    readonly detail: string,
  ) {}
}

function parseLines(lines: string[], caps: RefinerCaps): RefinerTurn {
  let rationale: string | null = null;
  let inQueries = false;
  const queries: string[] = [];
  lines.forEach((raw, i) => {
    const line = trimLineEnd(raw);
    if (!line) return;
    const where = `line ${i + 1} ${JSON.stringify(line.slice(0, 80))}`;
    if (rationale === null) {
      if (line.startsWith(RATIONALE_HEADER)) {
        const body = trimField(line.slice(RATIONALE_HEADER.length));
        if (!body) throw new Invalid('empty_rationale', `${where}: the rationale is empty; write one line saying why the batch changes`);
        if (chars(body) > caps.maxRationaleChars)
          throw new Invalid('rationale_too_long', `${where}: the rationale has ${chars(body)} characters, more than ${caps.maxRationaleChars}`);
        rationale = body;
        return;
      }
      if (line.startsWith(QUERIES_HEADER) || line.startsWith('-'))
        throw new Invalid('missing_rationale', `${where}: the turn must start with "${RATIONALE_HEADER}"`);
      throw new Invalid('unexpected_line', `${where}: the turn must start with "${RATIONALE_HEADER}"`);
    }
    if (!inQueries) {
      if (line === QUERIES_HEADER) {
        inQueries = true;
        return;
      }
      if (line.startsWith(QUERY_BULLET)) throw new Invalid('missing_queries', `${where}: a query before "${QUERIES_HEADER}"`);
      throw new Invalid('unexpected_line', `${where}: expected "${QUERIES_HEADER}" alone on its line after the rationale`);
    }
    if (!line.startsWith('-')) throw new Invalid('unexpected_line', `${where}: expected a query line "${QUERY_BULLET}..."`);
    if (line === '-') throw new Invalid('empty_query', `${where}: the query is empty`);
    if (!line.startsWith(QUERY_BULLET)) throw new Invalid('unexpected_line', `${where}: a query line starts with "${QUERY_BULLET}" (dash, space)`);
    const q = trimField(line.slice(QUERY_BULLET.length));
    if (!q) throw new Invalid('empty_query', `${where}: the query is empty`);
    if (queries.length === caps.maxQueries) throw new Invalid('too_many_queries', `${where}: more than ${caps.maxQueries} queries`);
    if (chars(q) > caps.maxQueryChars) throw new Invalid('query_too_long', `${where}: the query has ${chars(q)} characters, more than ${caps.maxQueryChars}`);
    queries.push(q);
  });
  if (rationale === null) throw new Invalid('missing_rationale', `no "${RATIONALE_HEADER}" line`);
  if (!inQueries) throw new Invalid('missing_queries', `no "${QUERIES_HEADER}" line after the rationale`);
  if (queries.length === 0)
    throw new Invalid('no_queries', `"${QUERIES_HEADER}" is followed by no query; write 1 to ${caps.maxQueries} lines "${QUERY_BULLET}..."`);
  return { rationale, queries };
}

/** Strict parse of one refiner output; never throws. */
export function parseRefinerTurn(text: string, caps: RefinerCaps): RefinerParse {
  if (typeof text !== 'string' || !trimField(text.replaceAll('\n', ' '))) return { ok: false, reason: 'empty', detail: 'the output is empty' };
  try {
    return { ok: true, turn: parseLines(text.split('\n'), caps) };
  } catch (e) {
    if (e instanceof Invalid) return { ok: false, reason: e.reason, detail: e.detail };
    throw e;
  }
}
