// The one text format of a policy turn (method §3): what the policy emits every turn, what
// the SFT targets are, and what the environment parses. Line-oriented so a tiny model
// can learn it:
//
//   STATE:
//   - budget | purpose: spending limit for the laptop | status: covered | source: dialogue | value: under 1200 EUR
//   - use_case | purpose: main workloads | status: uncovered | source: dialogue | value:
//   PLAN: ask about the main workloads before comparing models
//   ACTION: ASK
//   EXECUTE: What will you mainly use the laptop for?
//
// Rules (each failure is a typed InvalidReason, core/types.ts):
// - Sections appear once each, in the order STATE, PLAN, ACTION, EXECUTE; headers are
//   upper-case and start the line (`missing_section`, `duplicate_section`, `section_order`).
// - STATE: has nothing after the colon and is followed by zero or more slot lines
//   `- {name} | purpose: {purpose} | status: {status} | source: {source} | value: {value}`.
//   name and purpose are non-empty and contain no `|`; the value is the rest of the line.
//   status in {uncovered, partial, covered}; source in {profile, memory, dialogue}.
//   An uncovered slot has an empty value, a partial or covered one a non-empty value
//   (`bad_slot`, `bad_status`, `bad_source`, `duplicate_slot` for a repeated name).
// - PLAN: one non-empty line (`empty_plan`). ACTION: exactly ASK, RETRIEVE or STOP
//   (`unknown_action`). EXECUTE: one non-empty line (`empty_execute`): the memory query,
//   the one question, or the refined query q*.
// - Tolerated: trailing whitespace on any line (and CRLF), blank lines. Anything else is
//   junk: a non-blank line before STATE or inside PLAN/ACTION is `unexpected_line`, a
//   non-blank line after EXECUTE is `trailing_text`. An all-blank output is `empty`.
// - Whitespace means ASCII whitespace (space, \t, \v, \f, \r; \n ends a line); every other
//   character, U+00A0 and U+2028 included, is text. This keeps the rules sayable with ASCII
//   character classes: xgrammar <= 0.1.27 (the web build we run, and the same C++ in vLLM's
//   xgrammar of that age) mis-compiles character classes with non-ASCII members (issues
//   mlc-ai/xgrammar#848, #909), so `structured/turn/grammar.ebnf` uses ASCII classes only.
//
// The same language as a context-free grammar: `structured/turn/grammar.ebnf` (xgrammar's EBNF,
// what vLLM takes as `structured_outputs.grammar`), written by `policyGrammarEbnf()` in
// structured/turn/grammar-ebnf.ts from the constants below. Property tests check that the EBNF
// accepts every text parseTurn accepts, and that what it accepts parses or fails only as
// `duplicate_slot`: "no slot name twice" is not context-free, so a server applying only the
// EBNF (vLLM) can still produce it, and can still run into max_tokens (`truncated`): the
// EBNF has no length bounds (counted repetitions compile far too slowly). `gsteer serve`
// adds a token filter on top (structured/policy-filter.ts, request field
// `gsteer_token_filter: "policy_turn"`) that rules out repeated names, caps field lengths
// and ends every turn with EOS within max_tokens; under it every sampled turn parses. So
// parseTurn keeps checking everything: against vLLM it is what catches those two.
// `renderTurn` writes the canonical form (no trailing whitespace, no blank lines), so
// renderTurn(parseTurn(x).turn) === x for canonical x, and parseTurn(renderTurn(t)) gives t
// back for any turn whose fields are single-line, trimmed and consistent.
import type { ActionKind, EvidenceSlot, InvalidReason, ParseResult, PolicyTurn, SlotSource, SlotStatus } from '../../core/types.ts';

export const SECTIONS = ['STATE', 'PLAN', 'ACTION', 'EXECUTE'] as const;
type Section = (typeof SECTIONS)[number];
export const ACTIONS: readonly ActionKind[] = ['RETRIEVE', 'ASK', 'STOP'];
export const STATUSES: readonly SlotStatus[] = ['uncovered', 'partial', 'covered'];
export const SOURCES: readonly SlotSource[] = ['profile', 'memory', 'dialogue'];

/** ASCII whitespace other than the line break: the only whitespace the grammar knows. */
export const FIELD_SPACE = ' \t\v\f\r';
const isSpaceAt = (s: string, i: number) => FIELD_SPACE.includes(s[i] as string);
const trimLineEnd = (s: string) => {
  let end = s.length;
  while (end > 0 && isSpaceAt(s, end - 1)) end--;
  return s.slice(0, end);
};
/** String.prototype.trim for the grammar's whitespace (String#trim would also strip U+00A0, U+2028, ...). */
export function trimField(s: string): string {
  let start = 0;
  while (start < s.length && isSpaceAt(s, start)) start++;
  return trimLineEnd(s.slice(start));
}

/** One line, single spaces (the grammar has no multi-line fields). */
const oneLine = (s: string) => trimField(s.replace(/[ \t\n\v\f\r]+/g, ' '));
/** name/purpose end at the next `|`, so a `|` inside them would shift the fields. */
const noPipe = (s: string) => oneLine(s.replace(/\|/g, '/'));

export function renderSlot(s: EvidenceSlot): string {
  const value = oneLine(s.value);
  const line = `- ${noPipe(s.name)} | purpose: ${noPipe(s.purpose)} | status: ${s.status} | source: ${s.source} | value: ${value}`;
  return trimLineEnd(line);
}

/** The canonical text of a turn (the SFT target; what the policy must emit). */
export function renderTurn(turn: PolicyTurn): string {
  return ['STATE:', ...turn.state.map(renderSlot), `PLAN: ${oneLine(turn.plan)}`, `ACTION: ${turn.action}`, `EXECUTE: ${oneLine(turn.execute)}`].join('\n');
}

// `- name | purpose: P | status: S | source: R | value: V` (V may be empty, may hold `|`).
// Lines hold no "\n" (the split), so `[^]` is "any character of the line".
const SLOT_RE = /^- ([^|]*?) \| purpose: ([^|]*?) \| status: ([^|]*?) \| source: ([^|]*?) \| value:(?: ([^]*))?$/;
const HEADER_RE = /^(STATE|PLAN|ACTION|EXECUTE):([^]*)$/;

class Invalid {
  constructor(
    readonly reason: InvalidReason,
    readonly detail: string,
  ) {}
}

function parseSlot(line: string, lineNo: number): EvidenceSlot {
  const m = SLOT_RE.exec(line);
  const where = `line ${lineNo} ${JSON.stringify(line.slice(0, 120))}`;
  if (!m) throw new Invalid('bad_slot', `${where}: expected "- name | purpose: ... | status: ... | source: ... | value: ..."`);
  const [, name = '', purpose = '', status = '', source = '', value = ''] = m;
  if (!trimField(name) || !trimField(purpose)) throw new Invalid('bad_slot', `${where}: slot name and purpose must be non-empty`);
  if (!(STATUSES as readonly string[]).includes(status)) throw new Invalid('bad_status', `${where}: status "${status}" is not one of ${STATUSES.join(', ')}`);
  if (!(SOURCES as readonly string[]).includes(source)) throw new Invalid('bad_source', `${where}: source "${source}" is not one of ${SOURCES.join(', ')}`);
  const v = trimField(value);
  if (status === 'uncovered' && v) throw new Invalid('bad_slot', `${where}: an uncovered slot must have an empty value`);
  if (status !== 'uncovered' && !v) throw new Invalid('bad_slot', `${where}: a ${status} slot needs a value`);
  return { name: trimField(name), purpose: trimField(purpose), status: status as SlotStatus, value: v, source: source as SlotSource };
}

interface Draft {
  state: EvidenceSlot[];
  plan?: string;
  action?: ActionKind;
  execute?: string;
}

function onHeader(d: Draft, section: Section, rest: string, lineNo: number): void {
  const body = trimField(rest);
  switch (section) {
    case 'STATE':
      if (body) throw new Invalid('unexpected_line', `line ${lineNo}: nothing may follow "STATE:" on its line; slots go on their own "- " lines`);
      return;
    case 'PLAN':
      if (!body) throw new Invalid('empty_plan', `line ${lineNo}: PLAN is empty; write one line saying what changed and why the next action`);
      d.plan = body;
      return;
    case 'ACTION':
      if (!(ACTIONS as readonly string[]).includes(body))
        throw new Invalid('unknown_action', `line ${lineNo}: action "${body.slice(0, 40)}" is not one of ${ACTIONS.join(', ')}`);
      d.action = body as ActionKind;
      return;
    case 'EXECUTE':
      if (!body) throw new Invalid('empty_execute', `line ${lineNo}: EXECUTE is empty; write the memory query, the question or the refined query`);
      d.execute = body;
      return;
    default: {
      const never: never = section;
      throw new Error(`internal: unknown section ${String(never)}`);
    }
  }
}

function parseLines(lines: string[]): PolicyTurn {
  const d: Draft = { state: [] };
  let at = -1; // index in SECTIONS of the last header seen
  lines.forEach((raw, i) => {
    const line = trimLineEnd(raw);
    const lineNo = i + 1;
    if (!line) return;
    const h = HEADER_RE.exec(line);
    if (h) {
      const idx = SECTIONS.indexOf(h[1] as Section);
      if (idx <= at) throw new Invalid('duplicate_section', `line ${lineNo}: ${h[1]}: appears a second time`);
      if (idx !== at + 1) throw new Invalid('section_order', `line ${lineNo}: ${h[1]}: before ${SECTIONS[at + 1]}:; the order is ${SECTIONS.join(', ')}`);
      at = idx;
      onHeader(d, h[1] as Section, h[2] ?? '', lineNo);
      return;
    }
    const shown = JSON.stringify(line.slice(0, 80));
    if (at === 0 && line.startsWith('-')) {
      const slot = parseSlot(line, lineNo);
      if (d.state.some((s) => s.name === slot.name)) throw new Invalid('duplicate_slot', `line ${lineNo}: slot "${slot.name}" appears twice in STATE`);
      d.state.push(slot);
      return;
    }
    if (at === SECTIONS.length - 1) throw new Invalid('trailing_text', `line ${lineNo}: ${shown} after EXECUTE; the turn ends with the EXECUTE line`);
    const expected = at < 0 ? 'the output must start with "STATE:"' : at === 0 ? 'expected a slot line "- ..." or "PLAN:"' : `expected "${SECTIONS[at + 1]}:"`;
    throw new Invalid('unexpected_line', `line ${lineNo}: ${shown}: ${expected}`);
  });
  if (at < SECTIONS.length - 1) throw new Invalid('missing_section', `${SECTIONS[at + 1]}: is missing; a turn has ${SECTIONS.join(', ')} in that order`);
  return { state: d.state, plan: d.plan ?? '', action: d.action as ActionKind, execute: d.execute ?? '' };
}

/** Strict parse of one policy output; never throws. */
export function parseTurn(text: string): ParseResult {
  if (typeof text !== 'string' || !trimField(text.replaceAll('\n', ' '))) return { ok: false, reason: 'empty', detail: 'the output is empty' };
  try {
    return { ok: true, turn: parseLines(text.split('\n')) };
  } catch (e) {
    if (e instanceof Invalid) return { ok: false, reason: e.reason, detail: e.detail };
    return { ok: false, reason: 'unexpected_line', detail: `unparseable output (${(e as Error).message})` };
  }
}
