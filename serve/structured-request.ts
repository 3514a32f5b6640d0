// The request fields that ask for structured outputs, as current vLLM (>= 0.12) reads them:
//   structured_outputs: {json | regex | choice | grammar | json_object, disable_any_whitespace,
//                        disable_additional_properties, whitespace_pattern, structural_tag}
//   response_format: {type: "json_schema", json_schema: {schema}} | {type: "json_object"} | {type: "text"}
// plus gsteer's own `gsteer_token_filter: "policy_turn"` (vLLM ignores unknown fields).
// The guided_* fields vLLM 0.12 removed (and now ignores, answering unconstrained) are a
// 400 here that says what to send instead.
import { POLICY_GRAMMAR } from '../structured/turn/grammar-ebnf.ts';
import { menuGrammarEbnf } from '../structured/turn/menu-grammar.ts';

/** The grammars the policy filter runs on: the policy grammar and the baselines' menu grammars (sub-languages of it). */
const FILTERED_GRAMMARS = new Set([
  POLICY_GRAMMAR,
  ...[['STOP'], ['RETRIEVE', 'STOP'], ['ASK', 'STOP'], ['RETRIEVE', 'ASK', 'STOP']].map((m) => menuGrammarEbnf(m as ('RETRIEVE' | 'ASK' | 'STOP')[])),
]);
import { badRequest } from './errors.ts';
import type { Body } from './fields.ts';
import { policyMinTokens } from '../structured/turn/caps.ts';
import { refinerGrammarEbnf } from '../structured/qref/turn-ebnf.ts';
import { REFINER_MIN_TOKENS } from '../structured/refiner-filter.ts';

/** The grammars the refiner filter runs on: the QREF refiner's for qref.turn.maxQueries 1..16 (as the trainer replays them). */
const REFINER_GRAMMARS = new Set(Array.from({ length: 16 }, (_, k) => refinerGrammarEbnf(k + 1)));
import { TOKEN_FILTERS, type ConstraintSpec, type TokenFilterKind } from '../structured/constraint-spec.ts';

const KINDS = ['json', 'regex', 'choice', 'grammar', 'json_object', 'structural_tag'] as const;
const REMOVED: Record<string, string> = {
  guided_json: 'json',
  guided_regex: 'regex',
  guided_choice: 'choice',
  guided_grammar: 'grammar',
  guided_whitespace_pattern: 'whitespace_pattern',
  guided_decoding_backend: '',
};

const show = (v: unknown) => JSON.stringify(v)?.slice(0, 80) ?? String(v);

function removedFields(body: Body): void {
  for (const [old, now] of Object.entries(REMOVED)) {
    if (body[old] === undefined || body[old] === null) continue;
    const fix = now ? `send {"structured_outputs": {"${now}": ...}} instead` : "drop it (the backend is the server's choice)";
    throw badRequest(`${old} was removed in vLLM 0.12 (which now ignores it and answers unconstrained); ${fix}`, old);
  }
}

function fromStructuredOutputs(so: unknown): ConstraintSpec {
  const field = 'structured_outputs';
  if (!so || typeof so !== 'object' || Array.isArray(so))
    throw badRequest(`${field} must be an object like {"grammar": "root ::= ..."} but is ${show(so)}`, field);
  const o = so as Body;
  const given = KINDS.filter((k) => o[k] !== undefined && o[k] !== null);
  if (given.length !== 1) throw badRequest(`${field} must set exactly one of ${KINDS.join(', ')} but sets ${given.length ? given.join(', ') : 'none'}`, field);
  if (o.whitespace_pattern != null)
    throw badRequest(`${field}.whitespace_pattern is not supported (vLLM's xgrammar backend refuses it too); drop it`, `${field}.whitespace_pattern`);
  const anyWhitespace = o.disable_any_whitespace !== true;
  const kind = given[0] as (typeof KINDS)[number];
  const v = o[kind];
  const at = `${field}.${kind}`;
  switch (kind) {
    case 'grammar':
      if (typeof v !== 'string' || !v.trim()) throw badRequest(`${at} must be a non-empty EBNF grammar string but is ${show(v)}`, at);
      if (!v.includes('::='))
        throw badRequest(`${at} has no "::=" rule; it looks like a Lark grammar, and gsteer serve takes xgrammar EBNF (root ::= ...)`, at);
      return { type: 'grammar', grammar: v };
    case 'regex':
      if (typeof v !== 'string' || !v) throw badRequest(`${at} must be a non-empty regex string but is ${show(v)}`, at);
      return { type: 'regex', regex: v };
    case 'choice':
      if (!Array.isArray(v) || !v.length || v.some((c) => typeof c !== 'string'))
        throw badRequest(`${at} must be a non-empty list of strings but is ${show(v)}`, at);
      return { type: 'choice', choice: v as string[] };
    case 'json':
      if (typeof v === 'string') return { type: 'json', schema: v, anyWhitespace };
      if (typeof v === 'object' && !Array.isArray(v)) return { type: 'json', schema: JSON.stringify(v), anyWhitespace };
      throw badRequest(`${at} must be a JSON schema (an object or its JSON text) but is ${show(v)}; for any JSON object send "json_object": true`, at);
    case 'json_object':
      if (v !== true) throw badRequest(`${at} must be true but is ${show(v)}`, at);
      return { type: 'json_object', anyWhitespace };
    case 'structural_tag':
      throw badRequest(`${at} is not supported by gsteer serve; use grammar, regex, choice, json or json_object`, at);
    default: {
      const never: never = kind;
      throw new Error(`internal: kind ${String(never)}`);
    }
  }
}

/** OpenAI's response_format, mapped to structured outputs the way vLLM maps it. */
function fromResponseFormat(rf: unknown): ConstraintSpec | null {
  const field = 'response_format';
  const type = (rf as Body | null)?.type;
  if (type === 'text') return null;
  if (type === 'json_object') return { type: 'json_object', anyWhitespace: true };
  if (type === 'json_schema') {
    const schema = ((rf as Body).json_schema as Body | undefined)?.schema;
    if (!schema || typeof schema !== 'object')
      throw badRequest(`${field}.json_schema.schema must be a JSON schema object but is ${show(schema)}`, `${field}.json_schema`);
    return { type: 'json', schema: JSON.stringify(schema), anyWhitespace: true };
  }
  throw badRequest(`${field}.type must be "text", "json_object" or "json_schema" but is ${show(type)}`, field);
}

function tokenFilter(v: unknown): TokenFilterKind | null {
  if (v === undefined || v === null) return null;
  if (!(TOKEN_FILTERS as readonly unknown[]).includes(v))
    throw badRequest(`gsteer_token_filter must be one of ${TOKEN_FILTERS.join(', ')} but is ${show(v)}`, 'gsteer_token_filter');
  return v as TokenFilterKind;
}

/**
 * The constraint a request asks for (null: none). `maxTokens` is the request's max_tokens
 * (null: the endpoint default), checked against the policy filter's minimum.
 */
export function parseConstraint(body: Body, maxTokens: number | null, ignoreEos: boolean): ConstraintSpec | null {
  removedFields(body);
  const so = body.structured_outputs;
  const rf = body.response_format;
  const fromSo = so === undefined || so === null ? null : fromStructuredOutputs(so);
  const fromRf = rf === undefined || rf === null ? null : fromResponseFormat(rf);
  if (fromSo && fromRf) throw badRequest('send either structured_outputs or a non-text response_format, not both', 'response_format');
  const spec = fromSo ?? fromRf;
  const filter = tokenFilter(body.gsteer_token_filter);
  if (spec && ignoreEos)
    throw badRequest('ignore_eos cannot be combined with structured outputs: the grammar ends the choice with EOS; drop ignore_eos', 'ignore_eos');
  if (!filter) return spec;
  if (filter === 'refiner_turn') {
    if (spec?.type !== 'grammar' || !REFINER_GRAMMARS.has(spec.grammar))
      throw badRequest(
        'gsteer_token_filter "refiner_turn" runs on top of the QREF refiner grammar only (structured/qref/turn.ebnf, or refinerGrammarEbnf(n) for another qref.turn.maxQueries); send it as structured_outputs.grammar',
        'gsteer_token_filter',
      );
  } else if (spec?.type !== 'grammar' || !FILTERED_GRAMMARS.has(spec.grammar))
    throw badRequest(
      'gsteer_token_filter "policy_turn" runs on top of the policy grammar only (or a baseline menu grammar, structured/turn/menu-grammar.ts); send structured/turn/grammar.ebnf as structured_outputs.grammar',
      'gsteer_token_filter',
    );
  const min = filter === 'refiner_turn' ? REFINER_MIN_TOKENS : policyMinTokens();
  if (maxTokens === null || maxTokens < min)
    throw badRequest(
      `gsteer_token_filter "${filter}" needs max_tokens >= ${min} (the shortest turn and EOS) but max_tokens is ${maxTokens ?? 'unset'}; set max_tokens`,
      'max_tokens',
    );
  return { ...spec, filter };
}
