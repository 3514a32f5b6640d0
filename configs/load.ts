// Load a run config: YAML override files (later wins) then `--set key=value` overrides,
// validated by the one schema. Every problem names the file, the key, the value, the rule
// and the fix.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { InputError } from '../util/errors.ts';
import { RunConfigSchema, type RunConfig } from './schema.ts';

type Tree = Record<string, unknown>;

const isTree = (v: unknown): v is Tree => typeof v === 'object' && v !== null && !Array.isArray(v);

function deepMerge(base: Tree, over: Tree): Tree {
  const out: Tree = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const prev = out[k];
    out[k] = isTree(prev) && isTree(v) ? deepMerge(prev, v) : v;
  }
  return out;
}

/** `a.b.c=value`: the value is parsed as YAML, so numbers, booleans and [lists] keep their type. */
export function parseSet(assignment: string): Tree {
  const eq = assignment.indexOf('=');
  if (eq <= 0)
    throw new InputError(`--set ${assignment}: expected key=value (e.g. --set grpo.learningRate=1e-5)`);
  const path = assignment.slice(0, eq).split('.');
  const raw = assignment.slice(eq + 1);
  let value: unknown = parseYaml(raw);
  if (value === null && raw !== 'null') value = raw;
  let tree: Tree = {};
  const root = tree;
  path.forEach((key, i) => {
    if (i === path.length - 1) tree[key] = value;
    else tree = tree[key] = {} as Tree;
  });
  return root;
}

/** `chain`: the files whose `extends:` led here (a file met again is a cycle). */
function readYaml(file: string, chain: string[] = []): Tree {
  const at = resolve(file);
  if (chain.includes(at))
    throw new InputError(`${chain[0]}: extends: forms a cycle (${[...chain.slice(chain.indexOf(at)), at].join(' -> ')}); a config may extend another only once along a chain, so remove one of these extends:`);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new InputError(`${file}: cannot read config (${(e as Error).message}); check the path`);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text, { prettyErrors: true });
  } catch (e) {
    throw new InputError(`${file}: not valid YAML: ${(e as Error).message}`);
  }
  if (doc === null || doc === undefined) return {};
  if (!isTree(doc)) throw new InputError(`${file}: a run config must be a YAML mapping of keys, got ${typeof doc}`);
  // `extends: other.yaml` lets demo configs build on each other (paths relative to this file).
  const { extends: parent, ...rest } = doc;
  if (typeof parent === 'string') {
    const base = readYaml(new URL(parent, `file://${file.startsWith('/') ? file : `${process.cwd()}/${file}`}`).pathname, [...chain, at]);
    return deepMerge(base, rest);
  }
  if (parent !== undefined) throw new InputError(`${file}: extends = ${JSON.stringify(parent)}: must be one file path (relative to this file), e.g. extends: demo.yaml`);
  return rest;
}

function lookup(tree: unknown, path: PropertyKey[]): unknown {
  let cur = tree;
  for (const k of path) cur = isTree(cur) ? cur[k as string] : Array.isArray(cur) ? cur[k as number] : undefined;
  return cur;
}

/** Format zod issues as `source: key = value: rule`. */
export function formatIssues(issues: z.core.$ZodIssue[], input: unknown, source: string): string[] {
  return issues.flatMap((issue) => {
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((k) => {
        const key = [...issue.path, k].join('.');
        return `${source}: unknown key "${key}"; remove it or check the spelling against configs/schema.ts`;
      });
    }
    const key = issue.path.join('.') || '(root)';
    const value = lookup(input, issue.path);
    const shown = value === undefined ? 'missing' : JSON.stringify(value);
    return [`${source}: ${key} = ${shown}: ${issue.message}`];
  });
}

export function resolveConfig(raw: unknown, source = 'config'): RunConfig {
  const parsed = RunConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = formatIssues(parsed.error.issues, raw, source);
    throw new InputError(`invalid run config:\n  ${problems.join('\n  ')}`, problems);
  }
  return parsed.data;
}

export function loadConfig(files: string[], sets: string[] = []): RunConfig {
  let tree: Tree = {};
  for (const f of files) tree = deepMerge(tree, readYaml(f));
  for (const s of sets) tree = deepMerge(tree, parseSet(s));
  const source = [...files, ...(sets.length ? ['--set'] : [])].join(' + ') || 'defaults';
  return resolveConfig(tree, source);
}

/** The resolved config a run wrote to RUN/config.yaml (every process reads the same one). */
export function readRunConfig(file: string): RunConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new InputError(`${file} not found; ${dirname(file)} is not a gsteer run directory (start one with gsteer train)`);
    throw new InputError(`${file}: cannot read the run config (${(e as Error).message})`);
  }
  return resolveConfig(parseYaml(text), file);
}
