// Load a run config: YAML override files (later wins) then `--set key=value` overrides,
// validated by the one schema. Every problem names the file, the key, the value, the rule
// and the fix. Secrets come from the environment: any string may hold `${VAR}`, expanded
// when the config is loaded (an unset VAR is an error naming the key), and a run's
// RUN/config.yaml keeps the reference, never the value (runConfigTree); every key read from
// the environment is registered with the masking rule (util/secrets.ts), so no output shows it.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { InputError } from '../util/errors.ts';
import { isSecretField, maskConfig, registerEnvSecrets, registerSecret, secretPaths } from '../util/secrets.ts';
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
  if (eq <= 0) throw new InputError(`--set ${assignment}: expected key=value (e.g. --set grpo.learningRate=1e-5)`);
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
    throw new InputError(
      `${chain[0]}: extends: forms a cycle (${[...chain.slice(chain.indexOf(at)), at].join(' -> ')}); a config may extend another only once along a chain, so remove one of these extends:`,
    );
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
  if (parent !== undefined)
    throw new InputError(`${file}: extends = ${JSON.stringify(parent)}: must be one file path (relative to this file), e.g. extends: demo.yaml`);
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

const REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** A `${VAR}` expansion made while loading: where, the text written, the text used. */
interface Expansion {
  path: string;
  raw: string;
  value: string;
}
/** Every expansion this process made, by path (what runConfigTree puts back). */
const expansions = new Map<string, Expansion>();

/**
 * Replace `${VAR}` in every string with the environment's value; unset VARs are problems
 * naming the key (or, with `keepUnset`, left as written: the dashboard reads a run's config
 * without its secrets). Values in secret positions are registered with the masking rule.
 */
function expandEnv(tree: unknown, source: string, env: NodeJS.ProcessEnv, keepUnset: boolean): unknown {
  const problems: string[] = [];
  const walk = (v: unknown, path: string[]): unknown => {
    if (typeof v === 'string') {
      if (!v.includes('${')) return v;
      const value = v.replace(REF, (ref, name: string) => {
        const got = env[name];
        if (got !== undefined) return got;
        if (!keepUnset)
          problems.push(
            `${source}: ${path.join('.')} = "${v}": environment variable ${name} is not set; export it (README "Secrets": keys come from the environment)`,
          );
        return ref;
      });
      expansions.set(path.join('.'), { path: path.join('.'), raw: v, value });
      // a value in a secret position (URL credentials, a key-named field or query, a header) is a secret
      const leaf = path.reduceRight<unknown>((inner, k) => ({ [k]: inner }), value);
      if (secretPaths(leaf).length || isSecretField(path.at(-1) ?? '')) for (const [, name] of v.matchAll(REF)) registerSecret(env[name as string]);
      return value;
    }
    if (Array.isArray(v)) return v.map((x, i) => walk(x, [...path, String(i)]));
    if (isTree(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, [...path, k])]));
    return v;
  };
  const out = walk(tree, []);
  if (problems.length) throw new InputError(`invalid run config:\n  ${problems.join('\n  ')}`, problems);
  return out;
}

/** Keys named by apiKeyEnv-style fields (any field ending in KeyEnv) are secrets wherever they show up. */
function registerKeyEnvs(tree: unknown): void {
  const names: string[] = [];
  const walk = (v: unknown, key: string) => {
    if (typeof v === 'string' && /KeyEnv$/i.test(key)) names.push(v);
    else if (isTree(v)) for (const [k, x] of Object.entries(v)) walk(x, k);
  };
  walk(tree, '');
  registerEnvSecrets(names);
}

/** A copy of `cfg` with each value this process expanded from `${VAR}` put back as written. */
function withReferences(cfg: RunConfig): Tree {
  const tree = structuredClone(cfg) as unknown as Tree;
  for (const e of expansions.values()) {
    const keys = e.path.split('.');
    const parent = lookup(tree, keys.slice(0, -1));
    const last = keys.at(-1) as string;
    if (parent && typeof parent === 'object' && (parent as Tree)[last] === e.value) (parent as Tree)[last] = e.raw;
  }
  return tree;
}

/**
 * The config as a run directory stores it (RUN/config.yaml): `${VAR}` references as written,
 * never their values. A secret written literally would reach the file (and the workers that
 * read it): InputError naming its fields and the fix.
 */
export function runConfigTree(cfg: RunConfig): RunConfig {
  const tree = withReferences(cfg);
  const literal = secretPaths(tree);
  if (literal.length)
    throw new InputError(
      `the config holds secret(s) written out in ${literal.join(', ')}; a run stores its config in RUN/config.yaml for its workers, so a secret goes in an environment variable: write it as \${VAR} (e.g. redis://:\${REDIS_PASSWORD}@host:6379, "Bearer \${SEARCH_API_KEY}") and export VAR (README "Secrets")`,
      literal.map((p) => `${p}: holds a secret written out, which would reach RUN/config.yaml; write it as \${VAR} and export VAR (README "Secrets")`),
    );
  return tree as unknown as RunConfig;
}

/** The config fit for printing (`config show`): references as written, literal secrets as ***. */
export function printableConfig(cfg: RunConfig): RunConfig {
  const tree = withReferences(cfg);
  return maskConfig(tree) as unknown as RunConfig;
}

export function resolveConfig(raw: unknown, source = 'config'): RunConfig {
  const parsed = RunConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = formatIssues(parsed.error.issues, raw, source);
    throw new InputError(`invalid run config:\n  ${problems.join('\n  ')}`, problems);
  }
  return parsed.data;
}

export function loadConfig(files: string[], sets: string[] = [], env: NodeJS.ProcessEnv = process.env): RunConfig {
  let tree: Tree = {};
  for (const f of files) tree = deepMerge(tree, readYaml(f));
  for (const s of sets) tree = deepMerge(tree, parseSet(s));
  const source = [...files, ...(sets.length ? ['--set'] : [])].join(' + ') || 'defaults';
  const cfg = resolveConfig(expandEnv(tree, source, env, false), source);
  registerKeyEnvs(cfg);
  return cfg;
}

/**
 * The resolved config a run wrote to RUN/config.yaml (every process reads the same one),
 * `${VAR}` expanded from this process's environment; `keepUnset`: leave unset ones as
 * written (the dashboard, which needs no secret to read a run).
 */
export function readRunConfig(file: string, o: { keepUnset?: boolean } = {}): RunConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR')
      throw new InputError(`${file} not found; ${dirname(file)} is not a gsteer run directory (start one with gsteer train)`);
    throw new InputError(`${file}: cannot read the run config (${(e as Error).message})`);
  }
  const cfg = resolveConfig(expandEnv(parseYaml(text), file, process.env, o.keepUnset ?? false), file);
  registerKeyEnvs(cfg);
  return cfg;
}
