// One data problem, located well enough to fix by hand (errors name the input, the value, the rule and the fix): file, 1-based line
// (0 = the file as a whole), the record's id, the field path, and a message naming the
// value, the rule and the fix.

export interface Problem {
  file: string;
  line: number;
  /** The instance id, or the userId for a user-state record, when the record has one. */
  instanceId?: string;
  /** Field path inside the record, e.g. `targets[2].weight`; `(record)` for the whole record. */
  field: string;
  message: string;
}

/** `file:line: [id] field: message` — the format `gsteer data validate` prints. */
export function formatProblem(p: Problem): string {
  const id = p.instanceId !== undefined ? `[${p.instanceId}] ` : '';
  return `${p.file}:${p.line}: ${id}${p.field}: ${p.message}`;
}

/** A value for a message: JSON, shortened so one bad field cannot flood the terminal. */
export function show(value: unknown): string {
  if (value === undefined) return 'undefined';
  const s = typeof value === 'number' && !Number.isFinite(value) ? String(value) : JSON.stringify(value);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/** zod-style path -> `targets[2].weight`. */
export function pathText(path: readonly PropertyKey[]): string {
  let out = '';
  for (const k of path) out += typeof k === 'number' ? `[${k}]` : out ? `.${String(k)}` : String(k);
  return out || '(record)';
}
