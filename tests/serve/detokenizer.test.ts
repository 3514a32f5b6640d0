import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Detokenizer } from '../../serve/detokenizer.ts';
import { IM_END_ID, qwen3Tokenizer } from '../../core/tokenizer.ts';

const tok = qwen3Tokenizer();

function pushAll(d: Detokenizer, ids: number[]): number {
  for (let i = 0; i < ids.length; i++) if (d.push(ids[i]!)) return i;
  return -1;
}

describe('Detokenizer (real Qwen3 tokenizer)', () => {
  it('token by token gives the same text as decoding everything at once (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }), (s) => {
        const ids = tok.encode(s);
        const d = new Detokenizer(tok);
        pushAll(d, ids);
        expect(d.text).toBe(ids.length ? tok.decode(ids, { skipSpecialTokens: true }) : '');
        expect(d.offsets).toHaveLength(ids.length);
        for (let i = 1; i < d.offsets.length; i++) expect(d.offsets[i]!).toBeGreaterThanOrEqual(d.offsets[i - 1]!);
      }),
      { numRuns: 150 },
    );
  });

  it('holds back a character split over byte-level tokens', () => {
    // A rare CJK character is several byte tokens; the text must never show U+FFFD.
    const s = 'a𪚥b';
    const ids = tok.encode(s);
    expect(ids.length).toBeGreaterThan(3);
    const d = new Detokenizer(tok);
    for (const id of ids) {
      d.push(id);
      expect(d.text).not.toContain('\uFFFD');
    }
    expect(d.text).toBe(s);
  });

  it('special tokens give no text; offsets point into the text', () => {
    const ids = [...tok.encode('Hello world'), IM_END_ID];
    const d = new Detokenizer(tok);
    pushAll(d, ids);
    expect(d.text).toBe('Hello world');
    expect(d.offsets).toEqual([0, 5, 11]); // "Hello" | " world" | <|im_end|> at the end
  });

  it('cuts the text before the earliest stop string and reports it', () => {
    const ids = tok.encode('The answer is 42. Done. More text');
    const d = new Detokenizer(tok, ['Done', '. M']);
    const at = pushAll(d, ids);
    expect(at).toBeGreaterThan(0);
    expect(d.text).toBe('The answer is 42. ');
    expect(d.stoppedOn).toBe('Done');
    // A stop string spanning several tokens is found too.
    const d2 = new Detokenizer(tok, ['is 4']);
    pushAll(d2, ids);
    expect(d2.text).toBe('The answer ');
  });
});
