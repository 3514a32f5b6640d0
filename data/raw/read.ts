// Reading a raw PDR-Bench-shaped folder (data/raw/README.md) with every problem located the
// way `gsteer data validate` reports them: file, line, record id, field, and a message naming
// the value, the rule and the fix. Cross-record rules: unique task / user / instance ids,
// pairs naming known users and tasks, each (user, task) pair once, and every pair with at
// least one rubric item (targets come from the rubric, method §2).
import { join } from 'node:path';
import type { z } from 'zod';
import { personaFaults } from '../persona.ts';
import { show, type Problem } from '../problem.ts';
import { readRecords } from '../read.ts';
import { zodProblems } from '../zod-problems.ts';
import {
  RAW_FILES,
  RawPairSchema,
  RawTaskSchema,
  RawUserSchema,
  RubricItemSchema,
  type RawDataset,
  type RawInstance,
  type RawPair,
  type RawTask,
  type RawUser,
} from './schema.ts';

const SCHEMA_FILE = 'data/raw/schema.ts';

/** Allowed keys at a path: the record's own, or a rubric item's. */
function keysAt(objPath: readonly PropertyKey[], rootKeys: string[]): string[] {
  if (objPath.length === 0) return rootKeys;
  return objPath[objPath.length - 2] === 'rubric' ? Object.keys(RubricItemSchema.shape) : [];
}

interface Parsed<T> {
  value: T;
  file: string;
  line: number;
}

type Extra = (raw: Record<string, unknown>, report: (field: string, message: string) => void) => void;

/** Clean records of one file; `ids` collects the ids of every record, clean or not. */
function readKind<T>(
  file: string,
  schema: z.ZodType<T>,
  idOf: (raw: Record<string, unknown>) => string | undefined,
  problems: Problem[],
  ids: Set<string>,
  extra?: Extra,
): Parsed<T>[] {
  const read = readRecords(file);
  problems.push(...read.problems);
  const keys = Object.keys((schema as unknown as { shape: Record<string, unknown> }).shape);
  const out: Parsed<T>[] = [];
  for (const rec of read.records) {
    const base = { file: rec.file, line: rec.line };
    const raw = rec.value;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      problems.push({ ...base, field: '(record)', message: `expected a JSON object per line, got ${show(raw)}` });
      continue;
    }
    const obj = raw as Record<string, unknown>;
    const id = idOf(obj);
    if (id !== undefined) ids.add(id);
    const at = id !== undefined ? { ...base, instanceId: id } : base;
    const mine: Problem[] = [];
    extra?.(obj, (field, message) => mine.push({ ...at, field, message }));
    const parsed = schema.safeParse(obj);
    // A field our own rule reported (persona faults) is not reported again by zod.
    const head = (f: string) => f.split(/[.[]/)[0];
    const skip = (f: string) => mine.some((p) => head(p.field) === head(f));
    if (!parsed.success) mine.push(...zodProblems(parsed.error, obj, at, keys, skip, SCHEMA_FILE, keysAt));
    problems.push(...mine);
    if (!mine.length && parsed.success) out.push({ value: parsed.data, file: rec.file, line: rec.line });
  }
  return out;
}

const str = (v: unknown) => (typeof v === 'string' ? v : undefined);

function unique<T>(items: Parsed<T>[], idOf: (v: T) => string, what: string, problems: Problem[]): Map<string, Parsed<T>> {
  const seen = new Map<string, Parsed<T>>();
  for (const it of items) {
    const id = idOf(it.value);
    const first = seen.get(id);
    if (first)
      problems.push({
        file: it.file,
        line: it.line,
        instanceId: id,
        field: 'id',
        message: `duplicate ${what} id "${id}" (first at ${first.file}:${first.line}); ids must be unique; rename or remove one`,
      });
    else seen.set(id, it);
  }
  return seen;
}

/** Every record of `dir`'s three files, checked; `dataset` only when there is no problem. */
export function readRawDir(dir: string): { dataset?: RawDataset; problems: Problem[] } {
  const problems: Problem[] = [];
  const persona = (raw: Record<string, unknown>, report: (f: string, m: string) => void) => {
    if (raw.persona === undefined)
      report('persona', 'required field is missing; give the structured persona (an object of attributes, a list of facts, or text)');
    else for (const [f, m] of personaFaults(raw.persona)) report(f, m);
  };
  const taskIds = new Set<string>();
  const userIds = new Set<string>();
  const tasks = readKind<RawTask>(join(dir, RAW_FILES.tasks), RawTaskSchema, (r) => str(r.id), problems, taskIds);
  const users = readKind<RawUser>(join(dir, RAW_FILES.users), RawUserSchema, (r) => str(r.id), problems, userIds, persona);
  const pairs = readKind<RawPair>(
    join(dir, RAW_FILES.pairs),
    RawPairSchema,
    (r) => str(r.id) ?? (str(r.userId) && str(r.taskId) ? `${r.userId}-${r.taskId}` : undefined),
    problems,
    new Set(),
  );
  const taskById = unique(tasks, (t) => t.id, 'task', problems);
  const userById = unique(users, (u) => u.id, 'user', problems);
  const built: RawInstance[] = [];
  const seenPair = new Map<string, string>();
  const seenId = new Map<string, string>();
  for (const p of pairs) {
    const id = p.value.id ?? `${p.value.userId}-${p.value.taskId}`;
    const at = { file: p.file, line: p.line, instanceId: id };
    const where = `${p.file}:${p.line}`;
    const user = userById.get(p.value.userId)?.value;
    const task = taskById.get(p.value.taskId)?.value;
    let ok = true;
    const report = (field: string, message: string) => {
      ok = false;
      problems.push({ ...at, field, message });
    };
    // A pair naming a user or task whose own record is faulty: that record's problem says it all.
    if (!user && userIds.has(p.value.userId)) ok = false;
    else if (!user)
      report(
        'userId',
        `unknown user ${show(p.value.userId)}; every pair must name a user of ${RAW_FILES.users} (${[...userById.keys()].slice(0, 8).join(', ')}); fix the id or add the user`,
      );
    if (!task && taskIds.has(p.value.taskId)) ok = false;
    else if (!task)
      report(
        'taskId',
        `unknown task ${show(p.value.taskId)}; every pair must name a task of ${RAW_FILES.tasks} (${[...taskById.keys()].slice(0, 8).join(', ')}); fix the id or add the task`,
      );
    const key = `${p.value.userId}\u0000${p.value.taskId}`;
    const dupPair = seenPair.get(key);
    if (dupPair)
      report('(record)', `pair (${p.value.userId}, ${p.value.taskId}) listed twice (first at ${dupPair}); each (user, task) pair is one instance; remove one`);
    else seenPair.set(key, where);
    const dupId = seenId.get(id);
    if (dupId && !dupPair) report('id', `duplicate instance id "${id}" (first at ${dupId}); give the pair its own id`);
    else seenId.set(id, where);
    const rubric = p.value.rubric ?? task?.rubric ?? [];
    if (task && rubric.length === 0)
      report(
        'rubric',
        `no rubric items for this pair (task "${task.id}" has none either); targets are extracted from the personalization rubric (method §2); add rubric items to the task or the pair`,
      );
    if (ok && user && task) built.push({ id, user, task, query: p.value.query ?? task.query, rubric, split: p.value.split });
  }
  if (pairs.length === 0 && !problems.some((p) => p.file.endsWith(RAW_FILES.pairs))) {
    problems.push({
      file: join(dir, RAW_FILES.pairs),
      line: 0,
      field: '(file)',
      message: 'no pairs; list the (user, task) pairs to build, one {"userId", "taskId"} per line',
    });
  }
  if (problems.length) return { problems };
  return { dataset: { dir, tasks: tasks.map((t) => t.value), users: users.map((u) => u.value), pairs: built }, problems };
}
