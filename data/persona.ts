// The persona (method §2: facts visible to the simulator only) in the forms datasets bring:
// free text, a list of facts, or a structured profile of attributes as PDR-Bench describes
// its users ({"age": 67, "languages": ["Danish", "English"], "drives": false}). Both
// simulators see it through personaLines(), the one rendering: the embedded simulator
// answers from single lines, the LLM simulator's prompt lists them.
import { z } from 'zod';
import { show } from './problem.ts';

const PersonaScalarSchema = z.union([z.string(), z.number(), z.boolean()]);
/** An attribute value: a string, number or boolean, or a list of them. */
const PersonaValueSchema = z.union([PersonaScalarSchema, z.array(PersonaScalarSchema)]);

// personaFaults() below reports what this schema refuses, with messages; the two must agree
// (tests/data/persona.test.ts checks it as a property).
export const PersonaSchema = z.union([z.string(), z.array(z.string()), z.record(z.string().regex(/\S/), PersonaValueSchema)]);
export type Persona = z.output<typeof PersonaSchema>;

type Scalar = z.output<typeof PersonaScalarSchema>;

const scalarText = (v: Scalar): string => (typeof v === 'boolean' ? (v ? 'yes' : 'no') : String(v).trim());

/**
 * One readable fact per line: text split at line breaks, a list item by item, an object as
 * `key: value` lines (a list value joined with ", ", booleans as yes/no). Empty facts
 * (blank lines, "" or [] values) are left out: they tell the simulator nothing.
 */
export function personaLines(persona: Persona): string[] {
  const texts = typeof persona === 'string' ? persona.split(/\r?\n/) : Array.isArray(persona) ? persona : null;
  if (texts) return texts.map((s) => s.trim()).filter(Boolean);
  return Object.entries(persona).flatMap(([key, value]) => {
    const text = (Array.isArray(value) ? value : [value]).map(scalarText).filter(Boolean).join(', ');
    return text ? [`${key.trim()}: ${text}`] : [];
  });
}

const isScalar = (v: unknown) => typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));

/** The forms, for error messages. */
const FORMS = 'a string, a list of strings, or an object whose values are strings, numbers, booleans or lists of them';

/**
 * Each fault of a raw persona as (field, message), naming the value, the rule and the fix
 * (data/validate-record.ts reports them with the file and line). `undefined` is fine: the
 * schema's default (no facts).
 */
export function personaFaults(raw: unknown): [field: string, message: string][] {
  if (raw === undefined || typeof raw === 'string') return [];
  if (Array.isArray(raw)) {
    return raw.flatMap((v, i): [string, string][] =>
      typeof v === 'string'
        ? []
        : [
            [
              `persona[${i}]`,
              `fact ${show(v)} is not a string; a persona list holds facts as text; write it as a string (e.g. "age 67"), or make the persona an object ({"age": 67})`,
            ],
          ],
    );
  }
  if (typeof raw !== 'object' || raw === null) {
    return [['persona', `value ${show(raw)} is not a persona; persona must be ${FORMS}; write the facts in one of these forms or drop the field`]];
  }
  const rule = 'persona attribute values must be strings, finite numbers, booleans or lists of them (a flat profile)';
  return Object.entries(raw).flatMap(([key, v]): [string, string][] => {
    const field = `persona.${key}`;
    if (!key.trim()) return [[field, `empty attribute name (value ${show(v)}); name the attribute, e.g. "budget"`]];
    if (isScalar(v)) return [];
    if (Array.isArray(v)) {
      return v.flatMap((x, i): [string, string][] =>
        isScalar(x) ? [] : [[`${field}[${i}]`, `list item ${show(x)} is not a string, finite number or boolean; ${rule}; write it as text`]],
      );
    }
    if (v === null) return [[field, `value null; ${rule}; write the value or drop the attribute`]];
    if (typeof v !== 'object') return [[field, `value ${show(v)} is not a string, finite number or boolean; ${rule}; write it as text`]];
    const [subKey, subValue] = Object.entries(v)[0] ?? ['part', 'text'];
    return [[field, `value ${show(v)} is a nested object; ${rule}; flatten it (e.g. "${key}.${subKey}": ${show(subValue)}) or write it as text`]];
  });
}
