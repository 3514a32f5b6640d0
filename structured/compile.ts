// Grammar compilation, once per process per (spec, vocabulary): the server compiles what a
// request asks for, the trainer compiles the spec a turn was sampled under, and both get
// the same CompiledConstraint (and so the same masks) from this cache.
//
// A user's text is parsed first in a throwaway xgrammar instance (xgrammar.ts says why);
// only text that parsed reaches the instance holding the tokenizer infos and compiled
// grammars. A refusal is a ConstraintError naming the request field and carrying
// xgrammar's own message.
import { InputError } from '../util/errors.ts';
import { regexToEbnf } from './regex-ebnf.ts';
import { specField, specHash, type ConstraintSpec } from './constraint-spec.ts';
import { choiceEbnf } from './regex-ebnf.ts';
import type { TokenVocab } from './vocab.ts';
import { XgrammarError, XgrInstance, type CompiledGrammar, type GrammarCompiler, type XgrModule } from './xgrammar.ts';

/** A grammar that does not parse or compile; `field` is the request field (e.g. structured_outputs.grammar). */
export class ConstraintError extends InputError {
  override name = 'ConstraintError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

export interface CompiledConstraint {
  readonly spec: ConstraintSpec;
  /** sha256 of the spec; with `vocab.key` it identifies the masks. */
  readonly hash: string;
  readonly vocab: TokenVocab;
  readonly grammar: CompiledGrammar;
  /** The instance that owns `grammar` (matchers must come from the same one). */
  readonly xg: XgrModule;
  /** Wall time of the compile that filled this cache entry. */
  readonly compileMs: number;
  /** Matchers made from `grammar` are alive (TokenConstraint holds one from create to dispose). */
  retain(): void;
  release(): void;
}

/** Reference count so an entry dropped from the cache is freed only once nothing uses it. */
function leased(c: Omit<CompiledConstraint, 'retain' | 'release'>): CompiledConstraint & { evict(): void } {
  let uses = 0;
  let evicted = false;
  const free = () => evicted && uses === 0 && c.grammar.dispose();
  return {
    ...c,
    retain: () => void uses++,
    release: () => {
      uses--;
      free();
    },
    evict: () => {
      evicted = true;
      free();
    },
  };
}

/** Compiled grammars kept per process (least recently used dropped first). */
const CACHE_LIMIT = 64;

interface Main {
  inst: XgrInstance;
  compilers: Map<string, Promise<GrammarCompiler>>;
  compiled: Map<string, Promise<CompiledConstraint & { evict(): void }>>;
}

let main: Promise<Main> | null = null;
let sandbox: Promise<XgrInstance> | null = null;

function mainInstance(): Promise<Main> {
  main ??= XgrInstance.load().then((inst) => ({ inst, compilers: new Map(), compiled: new Map() }));
  return main;
}

/** Text the sandbox parses and the main instance compiles; the same text on both sides. */
type Source = { kind: 'ebnf'; text: string } | { kind: 'json'; schema: string; anyWhitespace: boolean };

function sourceOf(spec: ConstraintSpec): Source {
  switch (spec.type) {
    case 'grammar':
      return { kind: 'ebnf', text: spec.grammar };
    case 'regex':
      return { kind: 'ebnf', text: regexToEbnf(spec.regex) };
    case 'choice':
      return { kind: 'ebnf', text: choiceEbnf(spec.choice) };
    case 'json':
      return { kind: 'json', schema: spec.schema, anyWhitespace: spec.anyWhitespace };
    case 'json_object':
      return { kind: 'json', schema: '{"type": "object"}', anyWhitespace: spec.anyWhitespace };
    default: {
      const never: never = spec;
      throw new Error(`internal: spec ${JSON.stringify(never)}`);
    }
  }
}

/** Parse (not compile) in the sandbox; an abort discards the sandbox and becomes a ConstraintError. */
async function checkParses(src: Source, field: string): Promise<void> {
  sandbox ??= XgrInstance.load();
  const inst = await sandbox;
  try {
    await inst.run(async (xg) => {
      // indent -1 = Python's indent=None, what vLLM passes; strict mode as in vLLM
      const g = src.kind === 'ebnf' ? await xg.Grammar.fromEBNF(src.text) : await xg.Grammar.fromJSONSchema(src.schema, src.anyWhitespace, -1);
      g.dispose();
    });
  } catch (e) {
    if (!(e instanceof XgrammarError)) throw e;
    sandbox = null;
    throw new ConstraintError(field, `${field} was refused by xgrammar: ${e.message}`);
  }
}

function compilerFor(m: Main, vocab: TokenVocab): Promise<GrammarCompiler> {
  let c = m.compilers.get(vocab.key);
  if (!c) {
    c = m.inst.run(async (xg) => {
      // As vLLM: byte-level Qwen3 vocabulary, no prefix space, config vocab_size, EOS as stop tokens.
      const info = await xg.TokenizerInfo.createTokenizerInfo(vocab.encoded, 'byte_level', false, vocab.size, [...vocab.stopIds]);
      return xg.GrammarCompiler.createGrammarCompiler(info);
    });
    m.compilers.set(vocab.key, c);
  }
  return c;
}

async function build(m: Main, spec: ConstraintSpec, hash: string, vocab: TokenVocab): Promise<CompiledConstraint & { evict(): void }> {
  let src: Source;
  try {
    src = sourceOf(spec);
  } catch (e) {
    if (e instanceof InputError) throw new ConstraintError(specField(spec), e.message);
    throw e;
  }
  await checkParses(src, specField(spec));
  const compiler = await compilerFor(m, vocab);
  const t0 = performance.now();
  const grammar = await m.inst.run(async (xg) => {
    if (src.kind === 'json') return compiler.compileJSONSchema(src.schema, src.anyWhitespace, -1);
    const parsed = await xg.Grammar.fromEBNF(src.text);
    try {
      return await compiler.compileGrammar(parsed);
    } finally {
      parsed.dispose();
    }
  });
  return leased({ spec, hash, vocab, grammar, xg: m.inst.xg, compileMs: performance.now() - t0 });
}

/**
 * The compiled form of `spec` over `vocab`, from the per-process cache (key: spec hash +
 * vocabulary key). Throws ConstraintError for a grammar xgrammar refuses.
 */
export async function compileConstraint(spec: ConstraintSpec, vocab: TokenVocab): Promise<CompiledConstraint> {
  const m = await mainInstance();
  const hash = specHash(spec);
  const key = `${vocab.key}:${hash}`;
  let entry = m.compiled.get(key);
  if (entry) {
    m.compiled.delete(key); // re-insert: most recently used last
    m.compiled.set(key, entry);
    return entry;
  }
  entry = build(m, spec, hash, vocab);
  m.compiled.set(key, entry);
  entry.catch(() => m.compiled.delete(key));
  while (m.compiled.size > CACHE_LIMIT) {
    const oldest = m.compiled.keys().next().value as string;
    const dropped = m.compiled.get(oldest);
    m.compiled.delete(oldest);
    dropped?.then(
      (c) => c.evict(),
      () => undefined,
    );
  }
  return entry;
}
