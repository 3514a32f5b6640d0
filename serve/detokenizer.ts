// Incremental detokenization: decode the completion one token at a time without
// re-decoding the whole prefix (O(n) instead of O(n^2)), holding text back while the last
// tokens end in an incomplete UTF-8 sequence (byte-level BPE splits characters), and
// cutting the text at the first stop string. Special tokens (EOS, <think>) yield no text.
import type { Tokenizer } from '../core/tokenizer.ts';

/** How many already-emitted tokens are re-decoded with each new one (context for merges). */
const WINDOW = 6;

export class Detokenizer {
  private ids: number[] = [];
  private prefixStart = 0; // tokens [prefixStart, readStart) were decoded as context
  private readStart = 0; // tokens from here on have not produced text yet
  text = '';
  /** Per token: where its text starts in `text` (the OpenAI/vLLM `text_offset`). */
  readonly offsets: number[] = [];
  /** Set once a stop string appeared; `text` is cut before it. */
  stoppedOn: string | null = null;

  constructor(
    private readonly tok: Tokenizer,
    private readonly stops: readonly string[] = [],
  ) {}

  private decode(from: number, to: number): string {
    return to > from ? this.tok.decode(this.ids.slice(from, to), { skipSpecialTokens: true }) : '';
  }

  /** Add one sampled id; returns true when a stop string has just completed. */
  push(id: number): boolean {
    this.offsets.push(this.text.length);
    if (this.stoppedOn !== null) return true;
    this.ids.push(id);
    const before = this.decode(this.prefixStart, this.readStart);
    const after = this.decode(this.prefixStart, this.ids.length);
    if (after.length <= before.length || after.endsWith('\uFFFD')) return false;
    const searchFrom = Math.max(0, this.text.length - this.longestStop() + 1);
    this.text += after.slice(before.length);
    this.readStart = this.ids.length;
    this.prefixStart = Math.max(0, this.readStart - WINDOW);
    return this.findStop(searchFrom);
  }

  private longestStop(): number {
    return this.stops.reduce((m, s) => Math.max(m, s.length), 0);
  }

  /** Earliest stop string in the new text (and the few characters before it). */
  private findStop(from: number): boolean {
    let at = -1;
    for (const s of this.stops) {
      const i = this.text.indexOf(s, from);
      if (i >= 0 && (at < 0 || i < at)) {
        at = i;
        this.stoppedOn = s;
      }
    }
    if (at < 0) return false;
    this.text = this.text.slice(0, at);
    return true;
  }
}
