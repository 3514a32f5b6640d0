// Continuous batching: every step runs ONE forward pass for all live sequences (each decode
// sequence feeds its last sampled id; prefilling ones a run of prompt blocks within the
// step's token budget, vLLM's max_num_batched_tokens), then each sequence samples from its
// own logits. Sequences join at the next step after admission and leave when they finish;
// the queue, cancellation and drain are QueuedScheduler's (scheduler.ts).
//
// Prefill is chunked at fixed, position-aligned block boundaries (multiples of the prefix
// cache's block size; batch-step.ts computes attention per block), not batched whole: a
// block then has the same numbers whichever step computes it, so a prefix-cached block is
// exactly what a fresh prefill would compute, a long prompt cannot stall the decoders for
// its whole prefill, and the budget bounds every step's length.
//
// Prefix cache (prefix-cache.ts): before computing a prompt block, a sequence takes it from
// the cache when it is there (the whole prompt, with the last position's logits, when an
// identical prompt ran before); when another sequence computes that very block in this
// step, it waits one step and takes it from the cache then. So G identical prompts that
// arrive together (a GRPO group) compute their prefill once.
import type { Generation } from './generation.ts';
import type { ServeMetrics } from './metrics.ts';
import type { AdapterHandle, ServeModel, StepItem } from './model.ts';
import { planStep, type JobStep, type Phase } from './batch-plan.ts';
import { blockKeys, type PrefixCache } from './prefix-cache.ts';
import { QueuedScheduler, yieldToEventLoop, type Job } from './scheduler.ts';

export interface BatchOptions {
  maxConcurrency: number;
  /** New positions per forward pass (decode ids count 1 each); at least one prompt block always runs. */
  maxBatchedTokens: number;
  /** Attention segment / prefix cache block size, in positions. */
  blockSize: number;
  /** null: no prefix cache. */
  cache: PrefixCache | null;
  metrics?: ServeMetrics;
}

interface BatchJob extends Job {
  /** Feeding its prompt, or decoding (from its first sampled id on). */
  phase: Phase;
  /** Prompt positions in the KV cache. */
  fed: number;
  /** Of which taken from the prefix cache. */
  cached: number;
  /** Prefix-cache keys of the prompt's blocks (null without a cache). */
  keys: string[] | null;
  namespace: string;
}

const namespaces = new WeakMap<AdapterHandle, string>();
let nextNamespace = 0;

/** The prefix cache namespace of an adapter: a new one per loaded adapter object (a reload is another). */
export function adapterNamespace(a: AdapterHandle | null): string {
  if (!a) return 'base';
  let ns = namespaces.get(a);
  if (!ns) namespaces.set(a, (ns = `lora-${++nextNamespace}`));
  return ns;
}

export class BatchScheduler extends QueuedScheduler<BatchJob> {
  constructor(
    private readonly model: ServeModel,
    private readonly opts: BatchOptions,
  ) {
    super(opts.maxConcurrency, opts.metrics);
  }

  protected wrap(job: Job): BatchJob {
    const namespace = adapterNamespace(job.gen.adapterHandle);
    const keys = this.opts.cache?.enabled ? blockKeys(namespace, job.gen.spec.promptIds, this.opts.blockSize) : null;
    return { ...job, phase: 'prefill', fed: 0, cached: 0, keys, namespace };
  }

  /** One step: plan (pure, batch-plan.ts), apply the cache hits, one forward pass, sample. */
  protected async step(): Promise<void> {
    const cache = this.opts.cache;
    const plan = planStep(
      this.active.map((job) => ({ job, phase: job.phase, fed: job.fed, promptLength: job.gen.spec.promptIds.length, keys: job.keys })),
      { blockSize: this.opts.blockSize, maxBatchedTokens: this.opts.maxBatchedTokens, peek: cache ? (key) => cache.peek(key) : null },
    );
    for (const p of plan) this.takeHits(p);
    const items: StepItem[] = [];
    const owners: JobStep<BatchJob>[] = [];
    for (const p of plan) {
      const { gen } = p.job;
      if (p.phase === 'decode') items.push({ seq: gen.sequence(), ids: [gen.lastId()], logits: true });
      else if (p.blocks.length) {
        const end = this.blockEnd(p.job, p.blocks[p.blocks.length - 1] as number);
        items.push({ seq: gen.sequence(), ids: gen.spec.promptIds.slice(p.job.fed, end), logits: end === gen.spec.promptIds.length });
      } else continue;
      owners.push(p);
    }
    let logits: (Float32Array | null)[] = [];
    if (items.length) {
      const t0 = performance.now();
      try {
        logits = this.model.forward(items, this.opts.blockSize);
      } catch (e) {
        for (const p of owners) this.fail(p.job, e); // their caches are in an unknown state
        return;
      }
      this.metrics?.step(
        items.length,
        items.reduce((s, it) => s + it.ids.length, 0),
        (performance.now() - t0) / 1000,
      );
    }
    const ready: { job: BatchJob; row: Float32Array }[] = [];
    owners.forEach((p, i) => {
      if (p.phase === 'prefill') this.prefillDone(p, logits[i] ?? null);
      const row = logits[i];
      if (row) ready.push({ job: p.job, row });
    });
    // accept() may mask its row in place: a copy of the cache's logits.
    for (const p of plan) if (p.cachedLogits) ready.push({ job: p.job, row: Float32Array.from(p.cachedLogits) });
    // Each sequence samples from its own row; accept() may wait (a grammar's mask), so all are awaited together.
    await Promise.all(
      ready.map(async ({ job, row }) => {
        if (job.phase === 'prefill') this.metrics?.prefilled(job.fed, job.cached);
        try {
          const done = await job.gen.accept(row);
          this.metrics?.generated(1);
          if (job.gen.constraintSeconds !== null) this.metrics?.structured(job.gen.constraintSeconds);
          if (done) this.finish(job);
          else job.phase = 'decode'; // it sampled its first id
        } catch (e) {
          this.fail(job, e);
        }
      }),
    );
    await yieldToEventLoop();
  }

  private blockEnd(job: BatchJob, block: number): number {
    return Math.min(job.gen.spec.promptIds.length, (block + 1) * this.opts.blockSize);
  }

  /** The planned cache hits: their KV blocks join the sequence (and are marked used in the cache). */
  private takeHits(p: JobStep<BatchJob>): void {
    if (!p.hits.length) return;
    const { job } = p;
    for (const h of p.hits) this.opts.cache?.get(h.key);
    this.model.extend(
      job.gen.sequence(),
      p.hits.map((h) => h.block),
    );
    const taken = p.hits.reduce((s, h) => s + h.block.length, 0);
    job.fed += taken;
    job.cached += taken;
    if (job.fed === job.gen.spec.promptIds.length) job.gen.cachedTokens = job.cached;
  }

  /** After the forward pass: the prompt blocks are in the sequence's cache; keep them in the prefix cache. */
  private prefillDone(p: JobStep<BatchJob>, logits: Float32Array | null): void {
    const { job } = p;
    const n = job.gen.spec.promptIds.length;
    const cache = this.opts.cache;
    for (const b of p.blocks) {
      const start = b * this.opts.blockSize;
      const end = this.blockEnd(job, b);
      if (cache && job.keys) {
        const last = end === n && logits ? Float32Array.from(logits) : null;
        cache.put(job.namespace, job.keys[b] as string, b > 0 ? (job.keys[b - 1] as string) : null, this.model.saveBlock(job.gen.sequence(), start, end), last);
      }
      job.fed = end;
    }
    if (job.fed === n) job.gen.cachedTokens = job.cached;
  }
}
