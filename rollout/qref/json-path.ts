// The small path language of the HTTP search mapping (configs/qref.ts HttpSearchSchema):
// dotted object keys with [n] array indices, e.g. `hits.hits`, `_source.title`,
// `data[0].items`. Keys holding "." or "[" cannot be named (no API we map needs them).

export type PathStep = string | number;

/** `a.b[2].c` -> ['a', 'b', 2, 'c']; throws on an empty step or a bad index. */
export function parsePath(path: string): PathStep[] {
  const steps: PathStep[] = [];
  for (const part of path.split('.')) {
    const m = /^([^[\]]*)((?:\[\d+\])*)$/.exec(part);
    if (!m || (!m[1] && !m[2])) throw new Error(`"${path}": "${part}" is not a key or key[n]`);
    if (m[1]) steps.push(m[1]);
    for (const idx of (m[2] ?? '').matchAll(/\[(\d+)\]/g)) steps.push(Number(idx[1]));
  }
  return steps;
}

/** The value at `steps` inside `value`, or undefined when any step is missing. */
export function getPath(value: unknown, steps: readonly PathStep[]): unknown {
  let v = value;
  for (const s of steps) {
    if (typeof s === 'number' ? !Array.isArray(v) : typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
    v = (v as Record<PathStep, unknown>)[s];
  }
  return v;
}

/** Writes `leaf` at `steps` inside the plain object `root`, creating objects on the way (not arrays). */
export function setPath(root: Record<string, unknown>, steps: readonly PathStep[], leaf: unknown): void {
  let o: Record<PathStep, unknown> = root;
  steps.forEach((s, i) => {
    if (typeof s === 'number') throw new Error(`array index [${s}] in a request path; request paths are object keys only`);
    if (i === steps.length - 1) {
      o[s] = leaf;
      return;
    }
    const next = o[s];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) o[s] = {};
    o = o[s] as Record<PathStep, unknown>;
  });
}

/** The path as written in the config, for messages (`results[3].snippet`). */
export function pathLabel(base: string, index: number, field: string): string {
  return `${base}[${index}].${field}`;
}
