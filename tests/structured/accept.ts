// Whole-string acceptance by an EBNF grammar, with xgrammar and no tokenizer (what
// Testings.isGrammarAcceptString does, with the grammar compiled once): for property tests.
import { XgrInstance, type GrammarCompiler, type XgrModule } from '../../structured/xgrammar.ts';

let shared: Promise<{ xg: XgrModule; compiler: GrammarCompiler }> | null = null;

export async function ebnfAcceptor(ebnf: string): Promise<(text: string) => boolean> {
  shared ??= (async () => {
    const { xg } = await XgrInstance.load();
    const info = await xg.TokenizerInfo.createTokenizerInfo([]);
    return { xg, compiler: await xg.GrammarCompiler.createGrammarCompiler(info, false) };
  })();
  const { xg, compiler } = await shared;
  const compiled = await compiler.compileGrammar(ebnf);
  // terminateWithoutStopToken: the end of the string ends the match.
  const m = await xg.GrammarMatcher.createGrammarMatcher(compiled, undefined, true);
  return (text) => {
    m.reset();
    return m._acceptString(text) && m.isTerminated();
  };
}

/** Does some continuation of `text` complete the grammar? (Every character accepted in turn.) */
export async function ebnfPrefixAcceptor(ebnf: string): Promise<(text: string) => boolean> {
  await ebnfAcceptor(ebnf); // shares the instance and compiler
  const { xg, compiler } = await (shared as NonNullable<typeof shared>);
  const m = await xg.GrammarMatcher.createGrammarMatcher(await compiler.compileGrammar(ebnf), undefined, true);
  return (text) => {
    m.reset();
    return m._acceptString(text);
  };
}
