// The JSON answer of each LLM build step, as zod schemas: one source for the JSON schema
// sent as response_format (vLLM and OpenAI honour it) and for checking the reply. Rules a
// JSON schema cannot state (ids that exist, an acyclic IEG, an essential target with a seed
// answer, unique slot names, a profile that quotes no current target value) are refinements
// in the same schema, so a reply that breaks them is refused and retried with the error fed
// back to the model (endpoints/ chatJson with feedback).
import { z } from 'zod';
import { findCycle } from '../ieg.ts';
import { normalized } from './text.ts';
import { DROP_REASONS, type BuiltTarget, type Candidate } from './types.ts';

const text = z.string().regex(/\S/, 'must not be blank');

export function candidatesSchema(rubricItems: number) {
  return z
    .object({
      candidates: z.array(z.object({ description: text, criterion: text, rubricItems: z.array(z.number().int()).min(1) })).min(1),
    })
    .superRefine((v, ctx) => {
      v.candidates.forEach((c, i) =>
        c.rubricItems.forEach((r, j) => {
          if (r < 0 || r >= rubricItems)
            ctx.addIssue({ code: 'custom', path: ['candidates', i, 'rubricItems', j], message: `rubric item ${r} does not exist (0..${rubricItems - 1})` });
        }),
      );
    });
}

function everyIdOnce(ids: readonly string[], got: readonly string[], path: string, ctx: z.RefinementCtx, what: string) {
  const seen = new Set<string>();
  got.forEach((id, i) => {
    if (!ids.includes(id)) ctx.addIssue({ code: 'custom', path: [path, i, 'id'], message: `unknown ${what} id "${id}" (known: ${ids.join(', ')})` });
    if (seen.has(id)) ctx.addIssue({ code: 'custom', path: [path, i, 'id'], message: `${what} "${id}" answered twice` });
    seen.add(id);
  });
  const missing = ids.filter((id) => !seen.has(id));
  if (missing.length) ctx.addIssue({ code: 'custom', path: [path], message: `missing ${what}s: ${missing.join(', ')}; answer every one` });
}

export function validateSchema(cands: readonly Candidate[]) {
  const ids = cands.map((c) => c.id);
  return z
    .object({
      decisions: z.array(z.object({ id: z.string(), keep: z.boolean(), reason: z.enum(DROP_REASONS).nullable(), essential: z.boolean() })),
    })
    .superRefine((v, ctx) => {
      everyIdOnce(
        ids,
        v.decisions.map((d) => d.id),
        'decisions',
        ctx,
        'candidate',
      );
      v.decisions.forEach((d, i) => {
        if (!d.keep && d.reason === null)
          ctx.addIssue({ code: 'custom', path: ['decisions', i, 'reason'], message: `candidate "${d.id}" is dropped without a reason` });
        if (d.keep && d.reason !== null)
          ctx.addIssue({ code: 'custom', path: ['decisions', i, 'reason'], message: `candidate "${d.id}" is kept but has a drop reason; use null` });
      });
      if (!v.decisions.some((d) => d.keep))
        ctx.addIssue({ code: 'custom', path: ['decisions'], message: 'every candidate is dropped; keep the ones that change the research plan' });
    });
}

export function seedsSchema(targets: readonly Pick<BuiltTarget, 'id' | 'essential'>[]) {
  const ids = targets.map((t) => t.id);
  const essential = new Set(targets.filter((t) => t.essential).map((t) => t.id));
  return z.object({ seeds: z.array(z.object({ id: z.string(), seedQuestion: text, seedAnswer: z.string() })) }).superRefine((v, ctx) => {
    everyIdOnce(
      ids,
      v.seeds.map((s) => s.id),
      'seeds',
      ctx,
      'target',
    );
    v.seeds.forEach((s, i) => {
      if (essential.has(s.id) && !s.seedAnswer.trim())
        ctx.addIssue({
          code: 'custom',
          path: ['seeds', i, 'seedAnswer'],
          message: `essential target "${s.id}" has no seed answer; write the user's answer from the persona and context`,
        });
    });
  });
}

export function iegSchema(ids: readonly string[]) {
  return z.object({ edges: z.array(z.object({ parent: z.string(), child: z.string() })), lateActivatable: z.array(z.string()) }).superRefine((v, ctx) => {
    const known = new Set(ids);
    v.edges.forEach((e, i) => {
      for (const end of ['parent', 'child'] as const)
        if (!known.has(e[end])) ctx.addIssue({ code: 'custom', path: ['edges', i, end], message: `unknown target id "${e[end]}" (known: ${ids.join(', ')})` });
      if (e.parent === e.child) ctx.addIssue({ code: 'custom', path: ['edges', i], message: `self-loop on "${e.parent}"` });
    });
    const cycle = findCycle({ edges: v.edges.map((e) => [e.parent, e.child] as [string, string]) });
    if (cycle)
      ctx.addIssue({
        code: 'custom',
        path: ['edges'],
        message: `the graph has a cycle ${[...cycle, cycle[0]].join(' -> ')}; the IEG must be acyclic; remove or reverse one edge`,
      });
    const children = new Set(v.edges.map((e) => e.child));
    v.lateActivatable.forEach((id, i) => {
      if (!known.has(id)) ctx.addIssue({ code: 'custom', path: ['lateActivatable', i], message: `unknown target id "${id}"` });
      else if (!children.has(id))
        ctx.addIssue({
          code: 'custom',
          path: ['lateActivatable', i],
          message: `"${id}" is late-activatable but has no parent edge; add the edge or drop the flag`,
        });
    });
  });
}

export function slotsSchema(ids: readonly string[]) {
  return z
    .object({
      slots: z.array(z.object({ id: z.string(), name: z.string().regex(/^[a-z][a-z0-9_]*$/, 'snake_case: lowercase letters, digits and _'), purpose: text })),
    })
    .superRefine((v, ctx) => {
      everyIdOnce(
        ids,
        v.slots.map((s) => s.id),
        'slots',
        ctx,
        'target',
      );
      const names = new Set<string>();
      v.slots.forEach((s, i) => {
        if (names.has(s.name))
          ctx.addIssue({ code: 'custom', path: ['slots', i, 'name'], message: `slot name "${s.name}" used twice; names must be unique within the instance` });
        names.add(s.name);
      });
    });
}

/** The summary must not quote a value of the current instance (a leak into the SFT state). */
export function profileSchema(currentValues: readonly string[]) {
  const values = currentValues.map(normalized).filter((v) => v.length >= 12);
  return z.object({ summary: z.string() }).superRefine((v, ctx) => {
    const s = normalized(v.summary);
    const leaked = values.find((x) => s.includes(x));
    if (leaked)
      ctx.addIssue({
        code: 'custom',
        path: ['summary'],
        message: `the summary quotes a value of the current instance ("${leaked.slice(0, 60)}"); leave the current instance's values out`,
      });
  });
}
