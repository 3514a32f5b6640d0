// zod issues -> Problems with the record's location, the field path, the value found and
// the fix. Fields whose rules data/validate.ts checks itself (with a better message) are
// skipped here so each fault is reported once.
import type { z } from 'zod';
import { InstanceSchema, MemorySchema, TargetSchema, UserStateSchema } from './schema.ts';
import { pathText, show, type Problem } from './problem.ts';

type At = Omit<Problem, 'field' | 'message'>;

/** Allowed keys of the object at `objPath` (root, a target or a memory), for "unknown field" messages. */
function allowedKeys(objPath: readonly PropertyKey[], rootKeys: string[]): string[] {
  if (objPath.length === 0) return rootKeys;
  const parent = objPath[objPath.length - 2];
  if (parent === 'targets') return Object.keys(TargetSchema.shape);
  if (parent === 'memories') return Object.keys(MemorySchema.shape);
  return [];
}

function valueAt(raw: unknown, path: readonly PropertyKey[]): unknown {
  let v: unknown = raw;
  for (const k of path) v = typeof v === 'object' && v !== null ? (v as Record<PropertyKey, unknown>)[k] : undefined;
  return v;
}

export function zodProblems(
  error: z.ZodError,
  raw: unknown,
  at: At,
  rootKeys: string[],
  skip: (field: string) => boolean,
  /** Allowed keys of a nested object (other schemas than instances / user states). */
  /** Named in the fix of a type error. */
  schemaFile = 'data/schema.ts',
  keysAt: (objPath: readonly PropertyKey[], rootKeys: string[]) => string[] = allowedKeys,
): Problem[] {
  const out: Problem[] = [];
  for (const issue of error.issues) {
    const field = pathText(issue.path);
    if (skip(field)) continue;
    const value = valueAt(raw, issue.path);
    if (issue.code === 'unrecognized_keys') {
      // one problem per unknown key, located at the key itself
      const allowed = keysAt(issue.path, rootKeys).join(', ');
      for (const key of issue.keys) {
        const message = `unknown field "${key}"; remove it or fix the spelling (allowed: ${allowed})`;
        out.push({ ...at, field: pathText([...issue.path, key]), message });
      }
      continue;
    }
    let message: string;
    if (value === undefined) {
      message = `required field is missing (${issue.message}); add it`;
    } else if (issue.code === 'too_small' && typeof value === 'string') {
      message = `must not be empty (got ${show(value)}); write a non-empty string`;
    } else {
      message = `${issue.message} (got ${show(value)}); fix the value to match ${schemaFile}`;
    }
    out.push({ ...at, field, message });
  }
  return out;
}

export const INSTANCE_KEYS = Object.keys(InstanceSchema.shape);
export const USER_STATE_KEYS = Object.keys(UserStateSchema.shape);
