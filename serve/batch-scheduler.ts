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
import { blockKeys, type CacheEntry, type PrefixCache } from './prefix-cache.ts';
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
  /** Prompt positions in the KV cache. */
  fed: number;
  /** Of which taken from the prefix cache. */
  cached: number;
  /** Prefix-cache keys of the prompt's blocks (null without a cache). */
  keys: string[] | null;
  namespace: string;
}

/** What one sequence does in a step. */
interface Planned {
  job: BatchJob;
  /** Prompt blocks computed in this step (indexes into keys). */
  blocks: number[];
  decode: boolean;
  /** Logits from the cache (the whole prompt was cached). */
  cachedLogits: Float32Array | null;
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
    return { ...job, fed: 0, cached: 0, keys, namespace };
  }

  protected async step(): Promise<void> {
    const plan = this.plan();
    const items: StepItem[] = [];
    const owners: Planned[] = [];
    for (const p of plan) {
      const { gen } = p.job;
      if (p.decode) items.push({ seq: gen.sequence(), ids: [gen.lastId()], logits: true });
      else if (p.blocks.length) {
        const end = this.blockEnd(p.job, p.blocks[p.blocks.length - 1] as number);
        items.push({ seq: gen.sequence(), ids: gen.spec.promptIds.slice(p.job.fed, end), logits: end === gen.spec.promptIds.length });
      } else continue;
      owners.push(p);
    }
    let logits: (Float32Array | null)[] = [];
    if (items.length) {
      try {
        logits = this.model.forward(items, this.opts.blockSize);
      } catch (e) {
        for (const p of owners) this.fail(p.job, e); // their caches are in an unknown state
        return;
      }
      this.metrics?.step(items.length, items.reduce((s, it) => s + it.ids.length, 0));
    }
    const ready: { job: BatchJob; row: Float32Array }[] = [];
    owners.forEach((p, i) => {
      if (!p.decode) this.prefillDone(p, logits[i] ?? null);
      const row = logits[i];
      if (row) ready.push({ job: p.job, row });
    });
    for (const p of plan) if (p.cachedLogits) ready.push({ job: p.job, row: p.cachedLogits });
    // Each sequence samples from its own row; accept() may wait (a grammar's mask), so all are awaited together.
    await Promise.all(
      ready.map(async ({ job, row }) => {
        if (job.fed === job.gen.spec.promptIds.length && job.gen.result().ids.length === 0) this.metrics?.prefilled(job.fed, job.cached);
        try {
          const done = await job.gen.accept(row);
          this.metrics?.generated(1);
          if (done) this.finish(job);
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

  /** Decoders first (one id each), then prompt blocks in admission order within the token budget. */
  private plan(): Planned[] {
    const cache = this.opts.cache;
    const bs = this.opts.blockSize;
    let budget = this.opts.maxBatchedTokens;
    let prefillPlanned = false;
    const inFlight = new Set<string>(); // blocks some sequence computes in this step
    const plan: Planned[] = [];
    for (const job of this.active) {
      if (job.gen.result().ids.length > 0) {
        plan.push({ job, blocks: [], decode: true, cachedLogits: null });
        budget--;
      }
    }
    for (const job of this.active) {
      if (job.gen.result().ids.length > 0) continue;
      const n = job.gen.spec.promptIds.length;
      const p: Planned = { job, blocks: [], decode: false, cachedLogits: null };
      const hits: CacheEntry[] = [];
      for (let b = job.fed / bs; b * bs < n; b++) {
        const end = Math.min(n, (b + 1) * bs);
        const key = job.keys?.[b];
        if (key !== undefined && cache && p.blocks.length === 0) {
          const entry = cache.get(key);
          if (entry && (end < n || entry.logits)) {
            hits.push(entry);
            if (end === n) p.cachedLogits = Float32Array.from(entry.logits as Float32Array); // accept() may mask its row in place
            continue;
          }
        }
        if (key !== undefined && inFlight.has(key)) break; // computed by another sequence right now: take it next step
        if (end - b * bs > budget && prefillPlanned) break;
        p.blocks.push(b);
        budget -= end - b * bs;
        prefillPlanned = true;
        if (key !== undefined) inFlight.add(key);
      }
      if (hits.length) {
        this.model.extend(job.gen.sequence(), hits.map((h) => h.block));
        const taken = hits.reduce((s, h) => s + h.block.length, 0);
        job.fed += taken;
        job.cached += taken;
        if (job.fed === n) job.gen.cachedTokens = job.cached;
      }
      if (p.blocks.length || p.cachedLogits) plan.push(p);
    }
    return plan;
  }

  /** After the forward pass: the prompt blocks are in the sequence's cache; keep them in the prefix cache. */
  private prefillDone(p: Planned, logits: Float32Array | null): void {
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
