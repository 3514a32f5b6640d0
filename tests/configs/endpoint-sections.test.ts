// The endpoint sections (configs/endpoint-section.ts) against README's "Endpoint sections"
// table: every section in the schema has a row and every row a section; each resolves the
// row's model, timeout, concurrency and key variable; its kinds are the row's, and exactly the
// bold ones need baseUrl, with the one rule's message (key, rule, fix).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { endpointSections } from '../../configs/endpoint-section.ts';
import { RunConfigSchema } from '../../configs/schema.ts';

interface Row {
  path: string;
  kindKey: string;
  kinds: { name: string; remote: boolean }[];
  model: string;
  timeoutMs: number;
  concurrency: number;
  apiKeyEnv: string;
}

function readmeRows(): Row[] {
  const text = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const section = text.slice(text.indexOf('### Endpoint sections'));
  const table = section.slice(section.indexOf('| section |'), section.indexOf('\n\n', section.indexOf('| section |')));
  return table
    .split('\n')
    .slice(2)
    .map((line) => {
      const [section, kinds, model, timeoutMs, concurrency, apiKeyEnv] = line
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim()) as [string, string, string, string, string, string];
      const [, path, kindKey] = /^`([^`]+)`(?: \(`(\w+)`\))?$/.exec(section) ?? [];
      return {
        path: path as string,
        kindKey: kindKey ?? 'kind',
        kinds: kinds.startsWith('none') ? [] : kinds.split(', ').map((k) => ({ name: k.replace(/\*/g, ''), remote: k.startsWith('**') })),
        model,
        timeoutMs: Number(timeoutMs),
        concurrency: Number(concurrency),
        apiKeyEnv,
      };
    });
}

const rows = readmeRows();
const at = (tree: unknown, path: string[]): unknown => path.reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], tree);
/** A raw config with `value` at the dotted `path`. */
const nest = (path: string, value: unknown): Record<string, unknown> =>
  path.split('.').reduceRight<unknown>((inner, k) => ({ [k]: inner }), value) as Record<string, unknown>;
const messages = (raw: unknown): string[] => {
  const r = RunConfigSchema.safeParse(raw);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};
/** Sections absent by default, and what makes them present. */
const present: Record<string, Record<string, unknown>> = {
  'qref.filter.llm': { qref: { filter: { kind: 'llm', llm: { baseUrl: 'http://127.0.0.1:9/v1' } } } },
};

describe('endpoint sections (README "Endpoint sections")', () => {
  it('the table names every endpoint section of the schema, and no other', () => {
    expect(rows.length).toBeGreaterThan(5);
    expect(rows.map((r) => r.path).sort()).toEqual(
      endpointSections(RunConfigSchema)
        .map((s) => s.path.join('.'))
        .sort(),
    );
  });

  it.each(rows)("$path resolves the table's model, timeoutMs, concurrency and apiKeyEnv, with maxRetries 3", (row) => {
    const got = at(RunConfigSchema.parse(present[row.path] ?? {}), row.path.split('.'));
    expect(got).toMatchObject({ model: row.model, timeoutMs: row.timeoutMs, concurrency: row.concurrency, apiKeyEnv: row.apiKeyEnv, maxRetries: 3 });
    if (row.kinds.length) expect((got as Record<string, unknown>)[row.kindKey]).toBe(row.kinds[0]?.name);
  });

  it.each(rows.filter((r) => r.kinds.length))("$path takes exactly the table's kinds; the bold ones need baseUrl", (row) => {
    const kindPath = `${row.path}.${row.kindKey}`;
    expect(messages(nest(kindPath, 'no-such-kind')).join('\n')).toContain(`expected one of ${row.kinds.map((k) => `"${k.name}"`).join('|')}`);
    const local = row.kinds[0]?.name as string;
    for (const { name, remote } of row.kinds) {
      const missing = `${row.path}.baseUrl: ${kindPath} is "${name}" but ${row.path}.baseUrl is not set; set it to an OpenAI-compatible /v1 URL`;
      const got = messages(nest(kindPath, name));
      if (remote) {
        expect(got).toEqual([expect.stringContaining(missing)]);
        expect(got[0]).toMatch(new RegExp(` or use ${kindPath.replace(/\./g, '\\.')}=${local}$`));
        expect(messages(nest(row.path, { [row.kindKey]: name, baseUrl: 'http://127.0.0.1:9/v1' })).join('\n')).not.toContain('baseUrl');
      } else expect(got.join('\n')).not.toContain('baseUrl');
    }
  });
});
