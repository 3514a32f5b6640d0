// Whole-string acceptance by an EBNF grammar, with xgrammar and no tokenizer (what
// Testings.isGrammarAcceptString does, with the grammar compiled once): for property tests.
import { XgrInstance } from '../../../serve/structured/xgrammar.ts';

export async function ebnfAcceptor(ebnf: string): Promise<(text: string) => boolean> {
  const { xg } = await XgrInstance.load();
  const info = await xg.TokenizerInfo.createTokenizerInfo([]);
  const compiler = await xg.GrammarCompiler.createGrammarCompiler(info, false);
  const compiled = await compiler.compileGrammar(ebnf);
  // A matcher per string; terminateWithoutStopToken: the end of the string ends the match.
  const matchers = [await xg.GrammarMatcher.createGrammarMatcher(compiled, undefined, true)];
  return (text) => {
    const m = matchers[0]!;
    m.reset();
    return m._acceptString(text) && m.isTerminated();
  };
}
