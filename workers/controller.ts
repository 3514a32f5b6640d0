// The run controller (method §10.2, workers/README.md): admits updates as BullMQ flows while the policy lag
// allows, follows each update through its group stage and the trainer, loads every new
// adapter into the policy server, records metrics, checkpoints, and stops cleanly.
//
// Admission of update s needs (a) the user states s reads to be the ones the updates before
// it left: the group stages of s - 1 ... done, or none of them touching a user of s (then
// its group 0 waits for the user-state dump of s - 1, so updates still apply in order), and
// (b) adapter version versionFor(s) = s - 1 - maxPolicyLag trained and loaded. Lag 0 is the
// paper's on-policy loop; lag L lets rollouts of s run while the trainer works on s - 1 ...
// s - L. The loop wakes on BullMQ's job events (QueueEvents) and polls every pollMs as a
// fallback (events are not replayed after a reconnect). A full disk (ENOSPC, in any write of
// the run or in a job's failure) stops the run with a message saying so; it resumes from its
// last checkpoint once space is freed (every write is atomic, so nothing half-written stays).
import { existsSync, rmSync } from 'node:fs';
import { FlowProducer, Job, Queue, QueueEvents } from 'bullmq';
import type { RedisClient } from '../util/redis.ts';
import { writeCheckpoint, type TrainerState } from '../checkpoints/checkpoint.ts';
import { adapterName, type RunLayout } from '../checkpoints/layout.ts';
import type { EnvInstance } from '../rollout/env/types.ts';
import { groupSizeOf, scheduleOf, type RunConfig } from '../configs/schema.ts';
import type { MetricsRecord, MetricsSink } from '../monitor/sink.ts';
import { updateMetrics } from './update-metrics.ts';
import { RunCallReader } from './llm-calls.ts';
import { updateFlow } from './flow.ts';
import { readGroupFile, type GroupFile } from '../checkpoints/group-file.ts';
import { promoteGroup } from './group-worker.ts';
import { cutLateGroups } from './late-cut.ts';
import type { UserStatePart } from './parts.ts';
import { loadAdapter, unloadAdapter, type AdminOptions } from './policy-admin.ts';
import { readEngineState } from '../trainer/update/engine-states.ts';
import { UpdateResultSchema, type UpdateResult } from './payloads.ts';
import { groupIdOf, jobId, QUEUE, queuePrefix, runNamespace } from '../checkpoints/run-keys.ts';
import { writeRunFile } from '../util/run-file.ts';
import { isDiskFull } from '../util/errors.ts';
import { scheduleRngState, trainInstances, updateSchedule, versionFor } from './schedule.ts';
import type { RunInfo } from '../checkpoints/run-info.ts';

export interface ControllerDeps {
  cfg: RunConfig;
  layout: RunLayout;
  info: RunInfo;
  instances: EnvInstance[];
  users: UserStatePart;
  redis: RedisClient;
  sink: MetricsSink;
  policyUrl: string;
  startStep: number; // updates already done (0, or the checkpoint's step on resume)
  log: (msg: string) => void;
  onUpdate?: (rec: MetricsRecord, total: number) => void;
  /** Milestones of each update, for bench/orchestrator/profile.ts. */
  trace?: (event: 'admitted' | 'groups-done' | 'update-seen' | 'loaded' | 'recorded', step: number) => void;
}

export type Outcome = { kind: 'done' | 'stopped' | 'failed'; step: number; total: number; message?: string };

interface InFlight {
  admittedAt: number;
  version: number;
  waitTrainerMs: number; // rollout side idle before admission (time/wait_trainer_s)
  groupsDoneAt?: number;
  /** When the controller first saw a group of this update finished (grpo.groupDeadlineMs counts from it). */
  firstGroupDoneAt?: number;
  afterStep?: number; // admitted before the group stage of this step was done
}

/** Wakes the controller loop on a job event, or after `ms` when none comes. */
class Waker {
  private pending = false;
  private resolve: (() => void) | null = null;
  notify = (): void => {
    this.pending = true;
    this.resolve?.();
  };
  async wait(ms: number): Promise<void> {
    if (!this.pending) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((r) => {
        this.resolve = r;
        timer = setTimeout(r, ms);
      });
      clearTimeout(timer);
      this.resolve = null;
    }
    this.pending = false;
  }
}

/** Updates in a row with every group dropped before the run stops as failed. */
const MAX_ALL_DROPPED = 2;
const stateOf = async (q: Queue, id: string) => {
  const job = await Job.fromId(q, id);
  if (!job) return null;
  const state = await job.getState();
  // Fetched before it finished? Read it again for its return value / failure reason.
  const fresh = state === 'completed' || state === 'failed' ? await Job.fromId(q, id) : job;
  return fresh ? { job: fresh, state } : null;
};

/**
 * Where the run stands. Each counter only grows, and admitted >= groupsDone >= processed:
 * updates submitted as flows, updates whose group stage is done (user states dumped), and
 * updates trained with their adapter loaded.
 */
export interface RunState {
  admitted: number;
  groupsDone: number;
  processed: number;
}

/** What one stage did: moved the run on, found nothing to do, or ended the run. */
type StageResult = 'progress' | 'idle' | Outcome;

interface Handles {
  flow: FlowProducer;
  groups: Queue;
  updates: Queue;
}

export class RunController {
  private stopping = false;
  private aborted: string | null = null;
  private readonly plan;
  private readonly started = Date.now();
  private readonly st: RunState;
  private readonly inflight = new Map<number, InFlight>();
  /** Per update whose group stage is not done: the groups seen finished (completed, failed, or dropped as late). */
  private readonly groupsFinished = new Map<number, Set<number>>();
  private readonly llmCalls: RunCallReader;
  private lastCheckpoint: number;
  /** When the last group stage finished / the last update was recorded (the wait-time metrics). */
  private lastGroupsDoneAt = this.started;
  private lastUpdateDoneAt = this.started;
  /** Updates in a row whose every group was dropped (an endpoint down, not bad luck). */
  private allDropped = 0;
  /**
   * An update trained and its adapter loaded, not yet recorded (metrics, checkpoint): the
   * next admission goes first, since it waits only for the adapter.
   */
  private unrecorded: { step: number; result: UpdateResult; groupFiles: GroupFile[]; prevUpdateDoneAt: number } | null = null;
  /**
   * The stages, in priority order: each turn of the loop runs the first one that can move
   * the run on. Admission first (the next update waits only for an adapter), then recording
   * a trained update, then the group stage of the oldest update still rolling out, then the
   * next trained update in step order.
   */
  private readonly stages: readonly ((h: Handles) => Promise<StageResult>)[] = [
    (h) => this.admitStage(h),
    () => this.recordStage(),
    (h) => this.groupStage(h),
    (h) => this.updateStage(h),
  ];

  constructor(private readonly d: ControllerDeps) {
    this.llmCalls = new RunCallReader(d.layout.llmCalls);
    this.plan = updateSchedule(d.instances, scheduleOf(d.cfg), d.cfg.seed);
    this.lastCheckpoint = d.startStep;
    this.st = { admitted: d.startStep, groupsDone: d.startStep, processed: d.startStep };
  }

  get total(): number {
    return this.plan.length;
  }

  /** A copy of where the run stands (for tests and tools). */
  get state(): RunState {
    return { ...this.st };
  }

  /** SIGINT/SIGTERM: stop admitting, finish the admitted updates, checkpoint. */
  stop(): void {
    this.stopping = true;
  }

  /** Stop now (second signal, or a worker that cannot be kept alive): checkpoint what is done. */
  abort(reason: string): void {
    this.aborted = reason;
  }

  async run(): Promise<Outcome> {
    const { cfg, startStep } = this.d;
    const q = { prefix: queuePrefix(cfg.queues.prefix, this.d.info.runId), connection: this.d.redis };
    const h: Handles = { flow: new FlowProducer(q), groups: new Queue(QUEUE.groups, q), updates: new Queue(QUEUE.updates, q) };
    const waker = new Waker();
    const events = cfg.orchestrator.events ? [QUEUE.groups, QUEUE.updates].map((name) => new QueueEvents(name, q)) : [];
    for (const e of events) {
      e.on('completed', waker.notify);
      e.on('failed', waker.notify);
      e.on('error', () => undefined); // reconnects by itself; the poll covers the gap
    }
    await Promise.all(events.map((e) => e.waitUntilReady()));
    // Redis restarted without its data? A sentinel written now is gone after such a restart.
    const sentinel = `${runNamespace(cfg.queues.prefix, this.d.info.runId)}:controller`;
    await this.d.redis.set(sentinel, String(this.d.info.epoch));
    let redisLost = false;
    const onReady = () =>
      void this.d.redis.exists(sentinel).then(
        (n) => (redisLost ||= n === 0),
        () => undefined,
      );
    this.d.redis.on('ready', onReady);
    try {
      // The adapter versions the first updates sample from (on resume: the checkpoint's).
      for (let v = versionFor(startStep + 1, cfg.grpo.maxPolicyLag); v <= startStep && startStep < this.total; v++) await this.load(v);
      while (this.running()) {
        if (redisLost) return await this.lost('run state');
        const r = await this.turn(h);
        if (r === 'idle') await waker.wait(cfg.queues.pollMs);
        else if (r !== 'progress') return r;
      }
      const { processed } = this.st;
      if (this.aborted)
        return await this.finish(this.allDropped >= MAX_ALL_DROPPED || isDiskFull(this.aborted) ? 'failed' : 'stopped', processed, this.aborted);
      return await this.finish(processed >= this.total ? 'done' : 'stopped', processed);
    } catch (e) {
      if (!isDiskFull(e)) throw e;
      return { kind: 'failed', step: this.st.processed, total: this.total, message: this.diskFull(e) };
    } finally {
      this.d.redis.off('ready', onReady);
      await this.d.redis.del(sentinel).catch(() => undefined);
      await Promise.all(events.map((e) => e.close()));
      await h.flow.close();
      await h.groups.close();
      await h.updates.close();
    }
  }

  /** Work is left: updates to process (after a stop: only the admitted ones), or one to record. */
  private running(): boolean {
    const { processed, admitted } = this.st;
    return !this.aborted && (processed < (this.stopping ? admitted : this.total) || this.unrecorded !== null);
  }

  /** One turn of the loop: the first stage that is not idle. */
  private async turn(h: Handles): Promise<StageResult> {
    for (const stage of this.stages) {
      const r = await stage(h);
      if (r !== 'idle') return r;
    }
    return 'idle';
  }

  /** (1) Admit the next update when the policy lag and the user states allow it. */
  private async admitStage(h: Handles): Promise<StageResult> {
    const { admitted, groupsDone, processed } = this.st;
    const next = admitted + 1;
    if (this.stopping || admitted >= this.total || versionFor(next, this.d.cfg.grpo.maxPolicyLag) > processed || !this.mayAdmit(next, groupsDone))
      return 'idle';
    await this.admit(h.flow, next, groupsDone < admitted ? admitted : undefined);
    this.st.admitted = next;
    return 'progress';
  }

  /** (2) Record the update trained and loaded last (metrics, checkpoint). */
  private async recordStage(): Promise<StageResult> {
    if (!this.unrecorded) return 'idle';
    await this.record();
    return 'progress';
  }

  /**
   * (3) The group stage of the oldest update still rolling out: done when every group job
   * finished (or was dropped as late).
   */
  private async groupStage(h: Handles): Promise<StageResult> {
    const { admitted, groupsDone } = this.st;
    if (groupsDone >= admitted) return 'idle';
    const s = groupsDone + 1;
    const { runId, epoch } = this.d.info;
    const groups = this.plan[s - 1]!.length;
    const done = this.groupsFinished.get(s) ?? new Set<number>();
    this.groupsFinished.set(s, done);
    const state = (g: number) => h.groups.getJobState(jobId.group(runId, epoch, s, g));
    // Group stages finish in group order (each waits for the one before), so the scan stops at
    // the first group not finished: one or two states per turn, not one per group
    // (orchestrator.sparseGroupPolls; off: every open group's state, as before bench/fleet).
    const open = Array.from({ length: groups }, (_, g) => g).filter((g) => !done.has(g));
    const sparse = this.d.cfg.orchestrator.sparseGroupPolls;
    const seen = sparse ? [] : await Promise.all(open.map(state)); // off: every open group each turn
    for (const [k, g] of open.entries()) {
      const st = sparse ? await state(g) : seen[k]!;
      if (st === 'unknown') return await this.lost(`group jobs of update ${s}`);
      if (st !== 'completed' && st !== 'failed') {
        if (sparse) break;
        continue;
      }
      done.add(g);
    }
    const f = this.inflight.get(s);
    if (f && done.size > 0) f.firstGroupDoneAt ??= Date.now();
    const deadline = this.d.cfg.grpo.groupDeadlineMs;
    if (deadline !== null && f?.firstGroupDoneAt !== undefined && Date.now() >= f.firstGroupDoneAt + deadline) {
      const rest = open.filter((g) => !done.has(g));
      const states = await Promise.all(rest.map(state));
      const { cfg, info, layout, redis, log } = this.d;
      await cutLateGroups(
        { cfg, info, layout, redis, groups: h.groups, log },
        s,
        rest.filter((_, k) => states[k] === 'waiting-children'),
        done,
      );
    }
    if (done.size < groups) return 'idle';
    this.groupsFinished.delete(s);
    await this.dumpStates(s);
    this.st.groupsDone = s;
    // Group 0 of an update admitted early waits for this dump: start it now.
    if (this.inflight.get(s + 1)?.afterStep === s) await promoteGroup(h.groups, jobId.group(runId, epoch, s + 1, 0));
    return 'progress';
  }

  /** (4) The next update in step order, once the trainer finished it: load its adapter. */
  private async updateStage(h: Handles): Promise<StageResult> {
    const { groupsDone, processed } = this.st;
    if (processed >= groupsDone) return 'idle';
    const s = processed + 1;
    const u = await stateOf(h.updates, jobId.update(this.d.info.runId, this.d.info.epoch, s));
    if (!u) return await this.lost(`update job ${s}`);
    if (u.state === 'failed')
      return await this.finish(
        'failed',
        processed,
        isDiskFull(u.job.failedReason)
          ? this.diskFull(u.job.failedReason)
          : `update ${s} failed after ${this.d.cfg.queues.attempts} attempt(s): ${u.job.failedReason}`,
      );
    if (u.state !== 'completed') return 'idle';
    this.d.trace?.('update-seen', s);
    await this.loadVersion(s, UpdateResultSchema.parse(u.job.returnvalue));
    this.st.processed = s;
    if (!this.d.cfg.orchestrator.earlyAdmission) await this.record();
    return 'progress';
  }

  /**
   * The user states update `step` reads are final: every earlier group stage is done, or
   * those still to run (updates groupsDone + 1 .. step - 1) touch none of its users.
   */
  private mayAdmit(step: number, groupsDone: number): boolean {
    if (groupsDone === step - 1) return true;
    if (!this.d.cfg.orchestrator.earlyAdmission) return false;
    const users = new Set(this.plan[step - 1]!.map((pg) => pg.userId));
    return this.plan.slice(groupsDone, step - 1).every((u) => u.every((pg) => !users.has(pg.userId)));
  }

  private async admit(flow: FlowProducer, step: number, afterStep: number | undefined): Promise<void> {
    const version = versionFor(step, this.d.cfg.grpo.maxPolicyLag);
    const planned = this.plan[step - 1]!;
    const withSnap = await Promise.all(planned.map(async (pg) => ({ ...pg, snapshotId: await this.d.users.snapshot(pg.userId) })));
    await flow.add(
      updateFlow(this.d.cfg, {
        runId: this.d.info.runId,
        epoch: this.d.info.epoch,
        step,
        policyVersion: version,
        groups: withSnap,
        ...(afterStep !== undefined ? { afterStep } : {}),
        ...this.samplerModel(version),
      }),
    );
    const now = Date.now();
    this.inflight.set(step, {
      admittedAt: now,
      version,
      waitTrainerMs: Math.max(0, now - this.lastGroupsDoneAt),
      ...(afterStep !== undefined ? { afterStep } : {}),
    });
    this.d.trace?.('admitted', step);
  }

  private async dumpStates(step: number): Promise<void> {
    const states = await this.d.users.dump();
    const text = states.map((s) => `${JSON.stringify(s)}\n`).join('');
    await writeRunFile(this.d.layout.stepStates(step), text, this.d.cfg.orchestrator.fsyncRunFiles);
    const f = this.inflight.get(step);
    this.lastGroupsDoneAt = Date.now();
    if (f) f.groupsDoneAt = this.lastGroupsDoneAt;
    this.d.trace?.('groups-done', step);
  }

  private admin(): AdminOptions {
    const p = this.d.cfg.policy;
    return { maxRetries: p.maxRetries, timeoutMs: p.timeoutMs, ...(process.env[p.apiKeyEnv] ? { apiKey: process.env[p.apiKeyEnv] } : {}) };
  }

  /**
   * A remote Tinker engine's sampler (method §5.13) reads each version's sampler weights by path: the
   * rollouts name that path as their model and nothing is loaded into the policy endpoint.
   */
  private samplerModel(version: number): { model?: string } {
    if (this.d.cfg.trainer.engine !== 'tinker') return {};
    const rec = readEngineState(this.d.layout.adapter(version));
    if (!rec?.sampler)
      throw new Error(`internal: adapter version ${version} has no sampler path (engine-state.json); the trainer saves one with every version`);
    return { model: rec.sampler };
  }

  private async load(version: number): Promise<void> {
    if (this.d.cfg.trainer.engine === 'tinker') return; // the sampler loads the version's path itself
    const dir = this.d.layout.adapter(version);
    await loadAdapter(this.d.policyUrl, adapterName(version), dir, this.admin());
  }

  /** Update `step` trained: load its adapter if a later update samples from it; stop if an endpoint is down. */
  private async loadVersion(step: number, result: UpdateResult): Promise<void> {
    const { layout } = this.d;
    const prevUpdateDoneAt = this.lastUpdateDoneAt;
    this.lastUpdateDoneAt = Date.now();
    if (step + 1 + this.d.cfg.grpo.maxPolicyLag <= this.total) await this.load(step);
    this.d.trace?.('loaded', step);
    const groupFiles = this.plan[step - 1]!.map((pg, g): GroupFile => {
      const path = layout.abs(layout.groupRel(groupIdOf(step, g)));
      return existsSync(path)
        ? readGroupFile(path)
        : {
            v: 1,
            groupId: groupIdOf(step, g),
            step,
            instanceId: pg.instanceId,
            userId: pg.userId,
            policyVersion: -1,
            snapshotId: '',
            dropped: true,
            reason: 'group stage failed',
            trajPaths: [],
            scores: [],
            best: -1,
            episodes: [],
            applied: false,
          };
    });
    const full = groupFiles.find((g) => g.dropped && isDiskFull(g.reason ?? ''));
    if (full) this.abort(this.diskFull(full.reason ?? ''));
    this.allDropped = groupFiles.every((g) => g.dropped) ? this.allDropped + 1 : 0;
    if (this.allDropped >= MAX_ALL_DROPPED)
      this.abort(`every group of the last ${this.allDropped} updates was dropped; last reason: ${groupFiles.at(-1)?.reason ?? '?'}`);
    this.unrecorded = { step, result, groupFiles, prevUpdateDoneAt };
  }

  /** Drop the adapters no update needs, record the metrics, checkpoint. */
  private async record(): Promise<void> {
    if (!this.unrecorded) return;
    const { step, result, groupFiles, prevUpdateDoneAt } = this.unrecorded;
    this.unrecorded = null;
    const { cfg, layout } = this.d;
    const L = cfg.grpo.maxPolicyLag;
    const oldest = versionFor(step + 1, L);
    if (cfg.trainer.engine !== 'tinker')
      for (let v = Math.max(0, oldest - 1 - L); v < oldest; v++) await unloadAdapter(this.d.policyUrl, adapterName(v), this.admin()).catch(() => undefined);
    const f = this.inflight.get(step);
    this.inflight.delete(step);
    const rec = updateMetrics(step, groupFiles, result, {
      wallSeconds: (Date.now() - this.started) / 1000,
      rolloutSeconds: f?.groupsDoneAt ? (f.groupsDoneAt - f.admittedAt) / 1000 : 0,
      policyVersionUsed: f?.version ?? versionFor(step, L),
      // The trainer waited when this update's groups finished after it was done with the previous one.
      waitRolloutsSeconds: f?.groupsDoneAt ? Math.max(0, f.groupsDoneAt - prevUpdateDoneAt) / 1000 : 0,
      waitTrainerSeconds: (f?.waitTrainerMs ?? 0) / 1000,
      groupSize: groupSizeOf(cfg),
    });
    // llm/<role>/...: the calls this update's groups made, from RUN_DIR/llm_calls.jsonl
    Object.assign(rec, this.llmCalls.take(groupFiles.map((g) => g.groupId)));
    await this.d.sink.write(rec);
    this.d.onUpdate?.(rec, this.total);
    if (step % cfg.checkpoint.every === 0 || step === this.total) await this.checkpoint(step);
    this.d.trace?.('recorded', step);
    // Adapter dirs older than anything still sampled or checkpointed can go.
    for (let v = Math.max(0, oldest - 2 - L); v < oldest - 1; v++) if (v < this.lastCheckpoint) rmSync(layout.adapter(v), { recursive: true, force: true });
  }

  private async checkpoint(step: number): Promise<void> {
    const { cfg, layout, info } = this.d;
    if (step === 0) return;
    const state: TrainerState = {
      v: 1,
      step,
      policyVersion: step,
      epoch: info.epoch,
      seed: cfg.seed,
      scheduleCursor: step,
      rng: scheduleRngState(cfg.seed, step, trainInstances(this.d.instances, cfg.grpo).length, scheduleOf(cfg).groupsPerUpdate),
      metricsLines: this.d.sink.lines(),
      baseModel: cfg.policy.model,
      lora: { r: cfg.lora.r, alpha: cfg.lora.alpha, targetModules: [...cfg.lora.targetModules] },
    };
    const lagged = [];
    for (let v = versionFor(step + 1, cfg.grpo.maxPolicyLag); v < step; v++) lagged.push({ version: v, dir: layout.adapter(v) });
    const states = layout.stepStates(step);
    await writeCheckpoint(
      layout,
      { step, state, adapterVersionDir: layout.adapter(step), userStatesFile: existsSync(states) ? states : null, laggedAdapters: lagged },
      cfg.checkpoint.keep,
    );
    this.lastCheckpoint = step;
    this.d.log(`checkpoint step ${step} written`);
  }

  private async finish(kind: Outcome['kind'], processed: number, message?: string): Promise<Outcome> {
    await this.record();
    if (processed > this.lastCheckpoint) await this.checkpoint(processed);
    return { kind, step: processed, total: this.total, ...(message ? { message } : {}) };
  }

  /** The message of a run stopped by a full disk. */
  private diskFull(e: unknown): string {
    const what = typeof e === 'string' ? e : (e as Error).message;
    return `the disk is full (${what.replace(/\s+/g, ' ').slice(0, 200)}); free space on the filesystem of ${this.d.layout.root} and continue with gsteer resume ${this.d.layout.root} (it starts from the last checkpoint)`;
  }

  /** Redis came back without the run's jobs (restarted without persistence): stop with a checkpoint. */
  private async lost(what: string): Promise<Outcome> {
    const { processed } = this.st;
    return this.finish(
      'failed',
      processed,
      `Redis no longer holds the ${what} (was it restarted without persistence?); the run stopped at update ${processed} with a checkpoint: continue with gsteer resume ${this.d.layout.root}`,
    );
  }
}
