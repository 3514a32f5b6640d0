// The persona forms (data/persona.ts): text, a list of facts, an object of attributes
// (PDR-Bench style). Their one rendering (expected lines written by hand), schema and
// validator agreeing on every value, and the forms through `gsteer data validate` and
// `gsteer sft build` (cli/main.ts, as the bin runs them).
import { describe, it, expect, afterAll, vi } from 'vitest';
import fc from 'fast-check';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PersonaSchema, personaFaults, personaLines } from '../../data/persona.ts';
import { main } from '../../cli/main.ts';

const fx = (name: string) => join(import.meta.dirname, '../fixtures/data', name);
const dir = mkdtempSync(join(tmpdir(), 'gsteer-persona-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function cli(argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((s: string) => void out.push(s));
  const error = vi.spyOn(console, 'error').mockImplementation((s: string) => void err.push(s));
  const write = vi.spyOn(process.stderr, 'write').mockImplementation(() => true); // sft build's progress bar
  try {
    return { code: await main(argv), out, err };
  } finally {
    log.mockRestore();
    error.mockRestore();
    write.mockRestore();
  }
}

describe('personaLines', () => {
  it('renders text by line, a list by item, an object as key: value lines', () => {
    expect(personaLines('Rides 60 km on weekends.\n  Commutes by train. \n\n')).toEqual(['Rides 60 km on weekends.', 'Commutes by train.']);
    expect(personaLines(['Rides 60 km on weekends.', ' ', 'Commutes by train.'])).toEqual(['Rides 60 km on weekends.', 'Commutes by train.']);
    expect(
      personaLines({
        age: 67,
        home: 'Aarhus, Denmark',
        languages: ['Danish', 'English'],
        drives: false,
        retired: true,
        mixed: [1.5, true, 'x'],
        none: [],
        blank: '',
      }),
    ).toEqual(['age: 67', 'home: Aarhus, Denmark', 'languages: Danish, English', 'drives: no', 'retired: yes', 'mixed: 1.5, yes, x']);
    expect(personaLines([])).toEqual([]);
    expect(personaLines('')).toEqual([]);
  });
});

// Any JSON value a dataset line can hold, biased towards near-valid personas.
const scalar = fc.oneof(fc.string(), fc.double(), fc.boolean(), fc.constant(null));
const value = fc.oneof(
  scalar,
  fc.array(scalar, { maxLength: 3 }),
  fc.dictionary(fc.string(), scalar, { maxKeys: 2 }),
  fc.array(fc.jsonValue(), { maxLength: 2 }),
);
const key = fc.oneof(fc.string({ maxLength: 3 }), fc.constantFrom('', ' ', '\t', 'age'));
const persona = fc.oneof(scalar, fc.array(fc.oneof(fc.string(), scalar), { maxLength: 4 }), fc.dictionary(key, value, { maxKeys: 4 }), fc.jsonValue());

describe('persona validation', () => {
  it('the validator reports a fault exactly when the schema refuses the value', () => {
    // A value the schema refuses without a reported fault would drop the record silently.
    fc.assert(
      fc.property(persona, (p) => {
        expect(personaFaults(p).length === 0).toBe(PersonaSchema.safeParse(p).success);
      }),
      { numRuns: 2000 },
    );
  });

  it('data validate accepts each form', async () => {
    const r = await cli(['data', 'validate', fx('persona-forms.jsonl')]);
    expect(r.code).toBe(0);
    expect(r.out).toEqual([`ok: ${fx('persona-forms.jsonl')} (4 instances)`]);
  });

  it('data validate names file:line, field, value, rule and fix for each bad persona', async () => {
    const f = fx('persona-bad.jsonl');
    const r = await cli(['data', 'validate', f]);
    expect(r.code).toBe(1);
    const rule = 'persona attribute values must be strings, finite numbers, booleans or lists of them (a flat profile)';
    const forms = 'persona must be a string, a list of strings, or an object whose values are strings, numbers, booleans or lists of them';
    expect(r.out).toEqual([
      `${f}:1: [fx-1] persona.home: value {"city":"Aarhus","country":"Denmark"} is a nested object; ${rule}; flatten it (e.g. "home.city": "Aarhus") or write it as text`,
      `${f}:2: [fx-2] persona.budget: value null; ${rule}; write the value or drop the attribute`,
      `${f}:3: [fx-3] persona: value null is not a persona; ${forms}; write the facts in one of these forms or drop the field`,
      `${f}:4: [fx-4] persona[1]: fact 60 is not a string; a persona list holds facts as text; write it as a string (e.g. "age 67"), or make the persona an object ({"age": 67})`,
      `${f}:5: [fx-5] persona.languages[1]: list item {"level":"B2"} is not a string, finite number or boolean; ${rule}; write it as text`,
      `${f}:6: [fx-6] persona: value 42 is not a persona; ${forms}; write the facts in one of these forms or drop the field`,
      `6 problem(s) in ${f} (6 instances)`,
    ]);
  });

  it('sft build takes each form and keeps the persona out of the policy examples', async () => {
    const out = join(dir, 'examples.jsonl');
    const r = await cli(['sft', 'build', '--data', fx('persona-forms.jsonl'), '--out', out]);
    expect(r.code).toBe(0);
    const examples = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { instanceId: string });
    // the three train instances (string, list, object persona); fx-4 is test split
    expect([...new Set(examples.map((e) => e.instanceId))].sort()).toEqual(['fx-1', 'fx-2', 'fx-3']);
    // persona facts are for the simulator only (method §2): none reaches a policy input
    for (const fact of ['Commutes by train', 'Aarhus', 'Danish']) expect(readFileSync(out, 'utf8')).not.toContain(fact);
  });
});
