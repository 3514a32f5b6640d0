// Per-model request order by seq_id (Tinker's rule: a training client numbers its requests
// 1, 2, 3, ... and the server runs them in that order, whatever order they arrive in; the SDK
// even sends a forward_backward's first chunk last so the later ones are queued when it lands).
// A task with seq n runs after n - 1 has finished; one that arrives early waits for the gap to
// fill. A task without a seq_id (older clients) goes after the highest seq seen so far.
import { InputError } from '../../util/errors.ts';

export class SeqQueue {
  private next: number;
  private highest: number;
  private readonly waiting = new Map<number, () => Promise<void>>();
  private running = false;

  /** `first`: the seq_id of the model's first request (1 after create_model). */
  constructor(first = 1) {
    this.next = first;
    this.highest = first - 1;
  }

  /** The seq_id this model runs next (gsteer's get_info extension: a client re-attaching continues here). */
  get nextSeq(): number {
    return this.highest + 1;
  }

  /** Has `seq` been queued or run already? */
  seen(seq: number): boolean {
    return seq < this.next || this.waiting.has(seq);
  }

  /** Queue `run` at `seq` (null: after the highest seen); resolves with its result once it ran in order. */
  submit<T>(seq: number | null, run: () => Promise<T>, who: string): Promise<T> {
    const at = seq ?? this.highest + 1;
    if (this.seen(at))
      throw new InputError(
        `${who}: seq_id ${at} was already used on this model (next is ${this.nextSeq}); a retried request must resend its seq_id with the same request`,
      );
    this.highest = Math.max(this.highest, at);
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(at, () => run().then(resolve, reject));
      void this.pump();
    });
  }

  private async pump(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      for (let task = this.waiting.get(this.next); task; task = this.waiting.get(this.next)) {
        this.waiting.delete(this.next);
        this.next++;
        await task();
      }
    } finally {
      this.running = false;
    }
  }
}
