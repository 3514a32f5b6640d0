// Compiling structured-outputs specs (structured/compile.ts, regex-ebnf.ts, spec.ts):
// the regex subset against JavaScript's own regex engine on random patterns, refusals with
// xgrammar's message (the instance holding compiled grammars survives them), the cache,
// choice escaping, and the trainer's replay.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileConstraint, ConstraintError } from '../../structured/compile.ts';
import { allowedIds, maskHas, TokenConstraint } from '../../structured/constraint.ts';
import { regexToEbnf } from '../../structured/regex-ebnf.ts';
import { replayConstraint } from '../../structured/replay.ts';
import { choiceEbnf } from '../../structured/regex-ebnf.ts';
import { qwen3Vocab } from '../../structured/vocab.ts';
import { qwen3Tokenizer } from '../../core/tokenizer.ts';
import { ebnfAcceptor } from './accept.ts';

// A regex AST rendered twice: in the supported subset (what a client sends) and as an
// equivalent JavaScript pattern with explicit ASCII classes (`.` = [^\n], \d = [0-9], ...).
type Re =
  | { k: 'lit'; c: string }
  | { k: 'any' }
  | { k: 'short'; c: 'd' | 'w' | 's' | 'D' | 'W' | 'S' }
  | { k: 'cls'; neg: boolean; items: [string, string][] }
  | { k: 'seq'; xs: Re[] }
  | { k: 'alt'; a: Re; b: Re }
  | { k: 'rep'; x: Re; q: '*' | '+' | '?' | [number, number | null] };

const ALPHA = ['a', 'b', 'c', '-', '.', '|', '*', '(', ')', '[', ']', '^', '$', '\\', ' ', '\t', 'é', '{'];
const SHORT_JS: Record<string, string> = { d: '[0-9]', w: '[a-zA-Z0-9_]', s: '[ \\t\\n\\r\\f\\v]', D: '[^0-9]', W: '[^a-zA-Z0-9_]', S: '[^ \\t\\n\\r\\f\\v]' };
/** JavaScript's u-mode refuses "\\-" outside a class; the subset accepts both. */
const esc = (c: string, js: boolean) => (js && c === '-' ? c : /[\\^$.|?*+()[\]{}-]/.test(c) ? `\\${c}` : c === '\t' ? '\\t' : c);
const escCls = (c: string) => (/[\\\]^-]/.test(c) ? `\\${c}` : c === '\t' ? '\\t' : c);

const reArb: fc.Arbitrary<Re> = fc.letrec<{ re: Re }>((tie) => ({
  re: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(...ALPHA).map((c) => ({ k: 'lit' as const, c })),
    fc.constant({ k: 'any' as const }),
    fc.constantFrom('d', 'w', 's', 'D', 'W', 'S').map((c) => ({ k: 'short' as const, c: c as 'd' })),
    fc
      .record({
        neg: fc.boolean(),
        items: fc.array(
          fc
            .tuple(fc.constantFrom('a', 'b', 'c', '-', ']', '^', '\\', ' ', '0', '9'), fc.constantFrom('a', 'c', 'z', '9'))
            .map(([lo, hi]) => (lo <= hi && lo !== '-' ? [lo, hi] : [lo, lo]) as [string, string]),
          { minLength: 1, maxLength: 3 },
        ),
      })
      .map((r) => ({ k: 'cls' as const, ...r })),
    fc.array(tie('re'), { minLength: 1, maxLength: 3 }).map((xs) => ({ k: 'seq' as const, xs })),
    fc.record({ a: tie('re'), b: tie('re') }).map((r) => ({ k: 'alt' as const, ...r })),
    fc
      .record({
        x: tie('re'),
        q: fc.oneof(
          fc.constantFrom('*' as const, '+' as const, '?' as const),
          fc.tuple(fc.nat(2), fc.option(fc.nat(2))).map(([m, d]) => [m, d === null ? null : m + d] as [number, number | null]),
        ),
      })
      .map((r) => ({ k: 'rep' as const, ...r })),
  ),
})).re;

function render(r: Re, js: boolean): string {
  switch (r.k) {
    case 'lit':
      return esc(r.c, js);
    case 'any':
      return js ? '[^\\n]' : '.';
    case 'short':
      return js ? (SHORT_JS[r.c] as string) : `\\${r.c}`;
    case 'cls':
      return `[${r.neg ? '^' : ''}${r.items.map(([lo, hi]) => (lo === hi ? escCls(lo) : `${escCls(lo)}-${escCls(hi)}`)).join('')}]`;
    case 'seq':
      return r.xs.map((x) => render(x, js)).join('');
    case 'alt':
      return `(?:${render(r.a, js)}|${render(r.b, js)})`;
    case 'rep': {
      const q = typeof r.q === 'string' ? r.q : `{${r.q[0]},${r.q[1] ?? ''}}`;
      return `(?:${render(r.x, js)})${q}`;
    }
  }
}

/** A few strings the pattern matches (random walk over the AST) and near misses. */
function samples(r: Re, seed: number): string[] {
  let s = seed;
  const rnd = (n: number) => (s = (s * 1103515245 + 12345) % 2 ** 31) % n;
  const gen = (x: Re): string => {
    switch (x.k) {
      case 'lit':
        return x.c;
      case 'any':
        return ALPHA[rnd(ALPHA.length)] as string;
      case 'short':
        return x.c === 'd' ? '7' : x.c === 'w' ? 'q' : x.c === 's' ? ' ' : 'é';
      case 'cls':
        return x.neg ? 'é' : (x.items[rnd(x.items.length)] as [string, string])[0];
      case 'seq':
        return x.xs.map(gen).join('');
      case 'alt':
        return gen(rnd(2) ? x.a : x.b);
      case 'rep': {
        const [m, n] = typeof x.q === 'string' ? (x.q === '?' ? [0, 1] : [x.q === '+' ? 1 : 0, 3]) : [x.q[0], x.q[1] ?? x.q[0] + 2];
        return Array.from({ length: m + rnd(n - m + 1) }, () => gen(x.x)).join('');
      }
    }
  };
  const hits = Array.from({ length: 4 }, () => gen(r));
  return [...hits, ...hits.map((h) => h.slice(1)), ...hits.map((h) => `${h}a`), '', 'é', '\n'];
}

describe('regex -> EBNF', () => {
  it('accepts exactly what the JavaScript regex accepts (full match), on random patterns', async () => {
    await fc.assert(
      fc.asyncProperty(reArb, fc.nat(), async (r, seed) => {
        const js = new RegExp(`^(?:${render(r, true)})$`, 'u');
        const accepts = await ebnfAcceptor(regexToEbnf(render(r, false)));
        for (const s of samples(r, seed)) expect(accepts(s), `${render(r, false)} on ${JSON.stringify(s)}`).toBe(js.test(s));
      }),
      { numRuns: 150 },
    );
  }, 120_000);

  it('writes a zero-count repetition as the empty string (xgrammar reads out of bounds compiling x{0,0} again)', async () => {
    expect(regexToEbnf('a(b|c){0,0}d{0}')).toBe('root ::= "a" "" ""\n');
    for (let i = 0; i < 5; i++) {
      const accepts = await ebnfAcceptor(regexToEbnf('(?:\\t){0,0}'));
      expect([accepts(''), accepts('\t')]).toEqual([true, false]);
    }
  });

  it('strips a leading ^ and trailing $, keeps single non-ASCII characters in classes', async () => {
    const accepts = await ebnfAcceptor(regexToEbnf('^[aé]{2}$'));
    expect([accepts('aé'), accepts('éé'), accepts('ab'), accepts('a')]).toEqual([true, true, false, false]);
  });

  it.each([
    ['(a)\\1', 'the backreference \\1'],
    ['(?=a)a', 'a lookaround'],
    ['\\bword', 'the word boundary'],
    ['a++', 'possessive'],
    ['a^b', '"^" after the start'],
    ['[é-ú]', 'non-ASCII'],
    ['[^é]', 'non-ASCII'],
    ['(ab', 'unclosed "("'],
    ['\\p{L}', 'the escape \\p'],
  ])('refuses %s naming the construct', (re, what) => {
    expect(() => regexToEbnf(re)).toThrow(what);
  });
});

describe('compileConstraint', () => {
  const vocab = qwen3Vocab(Int32Array.from([...Array.from({ length: 300 }, (_, i) => i), 151643, 151645]));

  it("refuses a grammar with xgrammar's message and the field; the compiled-grammar instance keeps working", async () => {
    const bad = compileConstraint({ type: 'grammar', grammar: 'root ::= "a" b' }, vocab);
    await expect(bad).rejects.toBeInstanceOf(ConstraintError);
    await expect(bad).rejects.toMatchObject({ field: 'structured_outputs.grammar', message: expect.stringContaining('Rule "b" is not defined') });
    await expect(compileConstraint({ type: 'grammar', grammar: 'root ::= "a' }, vocab)).rejects.toThrow(/EBNF lexer error.*string literal/);
    await expect(compileConstraint({ type: 'json', schema: '{"type": ', anyWhitespace: true }, vocab)).rejects.toMatchObject({
      field: 'structured_outputs.json',
    });
    await expect(compileConstraint({ type: 'regex', regex: '(a' }, vocab)).rejects.toMatchObject({ field: 'structured_outputs.regex' });
    const ok = await compileConstraint({ type: 'grammar', grammar: 'root ::= "ab"' }, vocab);
    const c = await TokenConstraint.create(ok, { maxTokens: 8 });
    expect(allowedIds(await c.nextMask(), null, vocab.size).length).toBeGreaterThan(0);
    c.dispose();
  });

  it('compiles a spec once per vocabulary', async () => {
    const spec = { type: 'choice' as const, choice: ['yes', 'no'] };
    const a = await compileConstraint(spec, vocab);
    expect(await compileConstraint({ type: 'choice', choice: ['yes', 'no'] }, vocab)).toBe(a);
    expect(await compileConstraint(spec, qwen3Vocab())).not.toBe(a);
  });

  it('choice: quotes, backslashes and newlines are matched literally', async () => {
    const choice = ['say "hi"', 'a\\b', 'two\nlines', 'plain'];
    const accepts = await ebnfAcceptor(choiceEbnf(choice));
    for (const c of choice) expect(accepts(c)).toBe(true);
    expect(accepts('say hi')).toBe(false);
  });
});

describe('replayConstraint', () => {
  const vocab = qwen3Vocab();
  const tok = qwen3Tokenizer();

  it('gives the masks the live constraint saw, shared across positions; a foreign id is reported', async () => {
    const compiled = await compileConstraint({ type: 'regex', regex: '[a-z ]+\\.' }, vocab);
    const ids = [...tok.encode('hello there world.'), 151645];
    const live = await TokenConstraint.create(compiled, { maxTokens: 32 });
    const seen: Int32Array[] = [];
    for (const id of ids) {
      const m = await live.nextMask();
      seen.push(m);
      expect(maskHas(m, id)).toBe(true);
      expect(live.accept(id)).toBe(true);
    }
    expect(live.isTerminated()).toBe(true);
    live.dispose();
    const r = await replayConstraint(compiled, { maxTokens: 32 }, ids);
    expect(r).toMatchObject({ accepted: true, rejectedAt: null });
    ids.forEach((_, t) => expect(r.masks[r.maskIndex[t] as number]).toEqual(seen[t]));
    expect(r.masks.length).toBeLessThan(ids.length); // the words share the free-text mask
    const foreign = [...tok.encode('hello'), ...tok.encode('!'), 151645];
    expect(await replayConstraint(compiled, { maxTokens: 32 }, foreign)).toMatchObject({ accepted: false, rejectedAt: tok.encode('hello').length });
  });
});
