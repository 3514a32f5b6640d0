// The one module that loads @mlc-ai/web-xgrammar (xgrammar compiled to WebAssembly).
//
// Why a loader: the package says `"type": "module"` but ships a UMD bundle whose Emscripten
// part calls `require` and reads `__filename` (no ESM exports), so a plain import fails in
// Node. We evaluate the bundle's text as a CommonJS function with our own `exports`,
// `module`, `require` and `__filename`: nothing is put on globalThis, and each evaluation is
// an independent wasm instance with its own memory. The wasm binary is inlined in the
// bundle (a base64 data URI), so nothing is downloaded.
//
// Why instances: xgrammar reports a bad grammar by printing "[FATAL] file:line: message"
// through the module's stderr hook and calling abort(), which throws a RuntimeError
// ("Aborted()") out of the C++ frame without unwinding it. An aborted instance is not
// trusted again. So user grammars are first parsed in a throwaway instance (`Sandbox`,
// compile.ts), and the instance that holds tokenizer infos and compiled grammars only ever
// sees grammars that parsed. Each instance's stderr goes to our own sink, so xgrammar's
// message becomes the 400's text and its warnings do not reach the server's stderr.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type * as XgrTypes from '@mlc-ai/web-xgrammar';

export type XgrModule = typeof XgrTypes;
export type { CompiledGrammar, GrammarCompiler, GrammarMatcher, TokenizerInfo } from '@mlc-ai/web-xgrammar';

const require = createRequire(import.meta.url);
const BUNDLE = require.resolve('@mlc-ai/web-xgrammar');
let source: string | null = null;

// The Emscripten part gets `createRequire` through `await import('module')`. A dynamic
// import inside `new Function` code has no module loader under vitest's vm contexts, so the
// one call is pointed at a parameter that returns node:module through require.
const IMPORT_PARAM = '__xgrImport';
const DYNAMIC_IMPORT = "import('module')";

function bundleSource(): string {
  const text = readFileSync(BUNDLE, 'utf8');
  const n = text.split(DYNAMIC_IMPORT).length - 1;
  if (n !== 1)
    throw new Error(`internal: expected one ${DYNAMIC_IMPORT} in ${BUNDLE}, found ${n}; @mlc-ai/web-xgrammar changed, update structured/xgrammar.ts`);
  return text.replace(DYNAMIC_IMPORT, `${IMPORT_PARAM}('module')`);
}

/** One wasm instance of xgrammar, with its stderr captured line by line. */
export class XgrInstance {
  /** Lines xgrammar printed since the last `run` began (FATAL messages, warnings). */
  private lines: string[] = [];
  /** Set once a call aborted the instance; it must not be used again. */
  aborted = false;
  private queue: Promise<void> = Promise.resolve();

  private constructor(readonly xg: XgrModule) {}

  static async load(): Promise<XgrInstance> {
    source ??= bundleSource();
    const module = { exports: {} as Record<string, unknown> };
    // The bundle's own CommonJS branch: `typeof exports === 'object' && typeof module !== 'undefined'`.
    const load = new Function('exports', 'module', 'define', 'require', '__filename', IMPORT_PARAM, source);
    load(module.exports, module, undefined, createRequire(BUNDLE), BUNDLE, (name: string) => Promise.resolve(require(name)));
    const inst = new XgrInstance(module.exports as unknown as XgrModule);
    await inst.bindStderr();
    return inst;
  }

  /**
   * Emscripten binds `console.error` (its stderr) when the binding initialises, on the first
   * call. We make that first call with a router in place, so the instance keeps the router.
   */
  private async bindStderr(): Promise<void> {
    const original = console.error;
    // Kept short: warnings printed outside `run` would otherwise pile up.
    const router = (...args: unknown[]) => {
      if (this.lines.length >= 64) this.lines.shift();
      this.lines.push(args.map(String).join(' '));
    };
    console.error = router;
    try {
      (await this.xg.Grammar.fromEBNF('root ::= "a"')).dispose();
    } finally {
      console.error = original;
    }
    this.lines = [];
  }

  /**
   * Runs `f`; an abort marks the instance and comes back as an Error carrying xgrammar's own
   * FATAL message (file/line prefix removed), e.g. `EBNF parser error at line 1, column 14:
   * Rule "b" is not defined`.
   */
  run<T>(f: (xg: XgrModule) => Promise<T> | T): Promise<T> {
    // One call at a time, so the lines read after a failure are that call's own.
    const result = this.queue.then(async () => {
      if (this.aborted) throw new Error('internal: xgrammar instance used after an abort');
      this.lines = [];
      try {
        return await f(this.xg);
      } catch (e) {
        if (!/Aborted\(/.test(String((e as Error)?.message ?? e))) throw e;
        this.aborted = true;
        throw new XgrammarError(fatalMessage(this.lines) ?? String((e as Error).message));
      }
    });
    this.queue = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }
}

/** xgrammar refused its input; `message` is xgrammar's own text. */
export class XgrammarError extends Error {
  override name = 'XgrammarError';
}

function fatalMessage(lines: readonly string[]): string | null {
  const fatal = lines.find((l) => l.startsWith('[FATAL]'));
  return fatal ? fatal.replace(/^\[FATAL\]\s*\S+:\d+:\s*/, '') : null;
}
