// Rules for ONE record (an instance or a user state), beyond what zod types say (method §2).
// They run on the raw JSON as well as through zod, so a record with a type error still
// gets every other fault reported. Cross-record rules (duplicate ids) are in validate.ts.
import type { z } from 'zod';
import type { JsonlRecord } from '../util/jsonl.ts';
import { findCycle } from './ieg.ts';
import { personaFaults } from './persona.ts';
import { InstanceSchema, SPLITS, UserStateSchema, type Instance, type UserState } from './schema.ts';
import { show, type Problem } from './problem.ts';
import { INSTANCE_KEYS, USER_STATE_KEYS, zodProblems } from './zod-problems.ts';

type Obj = Record<string, unknown>;
type Report = (field: string, message: string) => void;

const asObj = (v: unknown): Obj | null => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : null);
const asArr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

function splitRule(r: Obj, report: Report) {
  const ok = (SPLITS as readonly unknown[]).includes(r.split);
  if (r.split === undefined) report('split', `required field is missing; set it to one of ${SPLITS.join('|')}`);
  else if (!ok) report('split', `unknown split ${show(r.split)}; split must be one of ${SPLITS.join('|')}; fix the value`);
}

function weightRule(w: unknown, field: string, report: Report) {
  // JSON has no NaN/Infinity literals, but 1e999 parses to Infinity, and strings sneak in.
  if (w === undefined) report(field, 'required field is missing; w_i must be a finite number >= 0 (e.g. 1.0)');
  else if (typeof w !== 'number') report(field, `weight ${show(w)} is not a number; w_i must be a finite number >= 0; write it unquoted, e.g. 1.5`);
  else if (!Number.isFinite(w)) report(field, `weight ${show(w)} is not finite; w_i must be a finite number >= 0; use a value like 1.0-3.0`);
  else if (w < 0) report(field, `weight ${w} is negative; w_i must be >= 0 (method §2); use 0 to ignore the target or a positive importance`);
}

function targetRules(r: Obj, report: Report) {
  const targets = asArr(r.targets);
  if (Array.isArray(r.targets) && targets.length === 0) {
    report('targets', 'instance has no targets; every instance needs at least one elicitation target (method §2); add targets or drop the instance');
  }
  const childIds = new Set(asArr(r.edges).map((e) => asArr(e)[1]));
  const firstIndex = new Map<unknown, number>();
  targets.forEach((raw, i) => {
    const t = asObj(raw);
    if (!t) return; // zod reports the type
    const at = `targets[${i}]`;
    if (typeof t.id === 'string') {
      const first = firstIndex.get(t.id);
      if (first !== undefined)
        report(`${at}.id`, `duplicate target id ${show(t.id)} (first at targets[${first}]); target ids must be unique within an instance; rename one`);
      else firstIndex.set(t.id, i);
    }
    weightRule(t.weight, `${at}.weight`, report);
    if (typeof t.seedAnswer === 'string' && !t.seedAnswer.trim()) {
      report(
        `${at}.seedAnswer`,
        `empty seed answer ${show(t.seedAnswer)}; the simulator grounds its replies in it (method §3); write the user's specific first-person answer`,
      );
    }
    if (t.lateActivatable === true && !childIds.has(t.id)) {
      report(
        `${at}.lateActivatable`,
        `target ${show(t.id)} is lateActivatable but has no parent; late activation waits for a parent slot (method §7); add an edge [parent, ${show(t.id)}] or drop the flag`,
      );
    }
  });
}

function edgeRules(r: Obj, report: Report) {
  const known = new Set(
    asArr(r.targets)
      .map((t) => asObj(t)?.id)
      .filter((id): id is string => typeof id === 'string'),
  );
  const valid: [string, string][] = [];
  asArr(r.edges).forEach((raw, i) => {
    const e = asArr(raw);
    if (e.length !== 2 || typeof e[0] !== 'string' || typeof e[1] !== 'string') return; // zod reports the shape
    let ok = true;
    e.forEach((end, j) => {
      if (known.has(end as string)) return;
      ok = false;
      report(
        `edges[${i}][${j}]`,
        `unknown target ${show(end)}; edges are [parent, child] pairs of this instance's target ids (${[...known].join(', ')}); fix the id or add the target`,
      );
    });
    if (ok) valid.push([e[0], e[1]]);
  });
  const cycle = findCycle({ edges: valid });
  if (cycle) {
    report('edges', `the IEG has a cycle ${[...cycle, cycle[0]].join(' -> ')}; the IEG must be a DAG (method §2); remove or reverse one of these edges`);
  }
}

function personaRule(r: Obj, report: Report) {
  for (const [field, message] of personaFaults(r.persona)) report(field, message);
}

const INSTANCE_RULES = [splitRule, targetRules, edgeRules, personaRule];
const instanceSkips = (f: string) => f === 'split' || /^targets\[\d+\]\.weight$/.test(f) || /^persona($|[.[])/.test(f);

export function validateInstanceRecord(rec: JsonlRecord): { instance?: Instance; id?: string; problems: Problem[] } {
  const rules = (r: Obj, report: Report) => INSTANCE_RULES.forEach((rule) => rule(r, report));
  const out = validateRecord(rec, 'id', rules, InstanceSchema, INSTANCE_KEYS, instanceSkips, 'instance');
  return { instance: out.value as Instance | undefined, id: out.id, problems: out.problems };
}

function memoryRules(r: Obj, report: Report) {
  asArr(r.memories).forEach((raw, i) => {
    const m = asObj(raw);
    if (!m) return;
    const field = `memories[${i}].value`;
    if (m.value === undefined) report(field, 'required field is missing; a memory needs the remembered value');
    else if (typeof m.value !== 'string') report(field, `memory value ${show(m.value)} is not a string; write the value as text`);
    else if (!m.value.trim())
      report(field, `empty memory value ${show(m.value)}; a memory must carry a value Retrieve can return; write it or drop the memory`);
  });
}

const stateSkips = (f: string) => /^memories\[\d+\]\.value$/.test(f);

export function validateUserStateRecord(rec: JsonlRecord): { state?: UserState; id?: string; problems: Problem[] } {
  const out = validateRecord(rec, 'userId', memoryRules, UserStateSchema, USER_STATE_KEYS, stateSkips, 'user state');
  return { state: out.value as UserState | undefined, id: out.id, problems: out.problems };
}

/** Shared skeleton: custom rules on the raw object, then zod; the parsed value only when clean. */
function validateRecord(
  rec: JsonlRecord,
  idKey: string,
  rules: (r: Obj, report: Report) => void,
  schema: z.ZodType,
  keys: string[],
  skip: (field: string) => boolean,
  what: string,
): { value?: unknown; id?: string; problems: Problem[] } {
  const r = asObj(rec.value);
  const base = { file: rec.file, line: rec.line };
  if (!r) return { problems: [{ ...base, field: '(record)', message: `expected a JSON object (one ${what} per line), got ${show(rec.value)}` }] };
  const id = typeof r[idKey] === 'string' ? (r[idKey] as string) : undefined;
  const at = id !== undefined ? { ...base, instanceId: id } : base;
  const problems: Problem[] = [];
  rules(r, (field, message) => problems.push({ ...at, field, message }));
  const parsed = schema.safeParse(r);
  if (!parsed.success) problems.push(...zodProblems(parsed.error, r, at, keys, skip));
  return { value: problems.length ? undefined : parsed.data, id, problems };
}
