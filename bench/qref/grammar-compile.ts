// Why the refiner grammar leaves lengths to the parser (structured/qref/turn.ts): xgrammar's
// compile time over the full Qwen3 vocabulary for the grammar as written and for variants
// that bound lengths with counted repetitions. Each variant runs in its own process so the
// per-process cache (structured/compile.ts) cannot help it. Takes about 2 minutes.
// Run: node --import tsx bench/qref/grammar-compile.ts
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const VARIANTS: Record<string, [number, number]> = {
  'as written (no length bounds)': [0, 0],
  'queries {0,120}': [0, 120],
  'rationale {0,240}, queries {0,120}': [240, 120],
};

/** The refiner grammar of turn-ebnf.ts (5 queries) with optional counted repetitions. */
function grammar(rationale: number, query: number): string {
  const rc = rationale ? `rc{0,${rationale}}` : 'rest';
  const qc = query ? `qc{0,${query}}` : 'rest';
  const q = (k: number): string => (k === 1 ? 'query' : `query (("\\n" sp*)* "\\n" ${q(k - 1)})?`);
  return `root ::= (sp* "\\n")* "RATIONALE:" sp* mark ${rc} ("\\n" sp*)* "\\n" "QUERIES:" sp* ("\\n" sp*)* "\\n" ${q(5)} ("\\n" sp*)*
query ::= "- " sp* mark ${qc}
rc ::= [^\\n]
qc ::= [^\\n]
mark ::= [^\\n \\t\\v\\f\\r]
rest ::= [^\\n]*
sp ::= [ \\t\\v\\f\\r]
`;
}

if (process.argv[2] === '--child') {
  const [r, q] = [Number(process.argv[3]), Number(process.argv[4])];
  const { compileConstraint } = await import('../../structured/compile.ts');
  const { qwen3Vocab } = await import('../../structured/vocab.ts');
  const c = await compileConstraint({ type: 'grammar', grammar: grammar(r, q) }, qwen3Vocab());
  process.stdout.write(String(Math.round(c.compileMs)));
} else {
  console.log('variant                                  compile (ms, Qwen3 vocabulary, 151,936 ids)');
  for (const [name, [r, q]] of Object.entries(VARIANTS)) {
    const ms = execFileSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--child', String(r), String(q)], { encoding: 'utf8' });
    console.log(`${name.padEnd(40)} ${ms}`);
  }
}
