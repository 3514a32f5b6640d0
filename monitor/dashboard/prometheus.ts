// /metrics in the Prometheus text format (prom-client, a Registry of our own): the latest
// update's numbers as gauges, `gsteer_<key>` with the key's / and other characters as _
// and a `run` label; counters worked out from the records and the logs at each scrape, so a
// resumed run (or a restarted dashboard) continues its counts instead of starting at 0; and
// the job counts of the queues.
import { Counter, Gauge, Registry } from 'prom-client';
import type { MetricsRecord } from '../sink.ts';
import type { RunQueues } from './queues.ts';
import { RestartCounter } from './restarts.ts';
import type { ServedRun } from './served-run.ts';

/** `rewards/coverage/mean` -> `gsteer_rewards_coverage_mean` (Prometheus names: [a-zA-Z_:][a-zA-Z0-9_:]*). */
export const promName = (key: string) => `gsteer_${key.replace(/[^A-Za-z0-9_]/g, '_')}`;

/** Trajectories an update trained on: its record's count, or kept groups x group size for runs recorded before it. */
export const trajectoriesOf = (r: MetricsRecord, groupSize: number) =>
  typeof r.trajectories === 'number' ? r.trajectories : Number(r.groups ?? 0) * groupSize;

const sum = (records: readonly MetricsRecord[], f: (r: MetricsRecord) => number) => records.reduce((s, r) => s + f(r), 0);

export class PrometheusMetrics {
  readonly registry = new Registry();
  private readonly gauges = new Map<string, { key: string; gauge: Gauge }>();
  private readonly restartCounters = new Map<string, RestartCounter>();
  private readonly counters;
  private readonly queueJobs;
  private rendering: Promise<string> = Promise.resolve('');

  constructor(
    private readonly runs: readonly ServedRun[],
    private readonly queues: RunQueues,
  ) {
    const counter = (name: string, help: string) => new Counter({ name, help, labelNames: ['run'], registers: [this.registry] });
    this.counters = {
      updates: counter(
        'gsteer_updates_total',
        'updates recorded in metrics.jsonl (one per update; a resume re-runs the updates after its checkpoint, they count once)',
      ),
      trajectories: counter('gsteer_trajectories_total', 'scored trajectories the recorded updates trained on'),
      dropped: counter('gsteer_groups_dropped_total', 'groups dropped (a rollout out of attempts) over the recorded updates'),
      restarts: counter('gsteer_restarts_total', 'processes of the run restarted by the supervisor (marks in RUN/logs/*.log)'),
    };
    this.queueJobs = new Gauge({
      name: 'gsteer_queue_jobs',
      help: 'jobs per BullMQ queue and state (queues whose Redis answers)',
      labelNames: ['prefix', 'queue', 'state'],
      registers: [this.registry],
    });
    for (const run of runs) this.restartCounters.set(run.name, new RestartCounter(run.layout.logs));
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The text of one scrape (scrapes run one after another: each sets every value, then renders). */
  render(): Promise<string> {
    this.rendering = this.rendering.catch(() => '').then(() => this.renderNow());
    return this.rendering;
  }

  private gaugeFor(key: string): Gauge | null {
    const name = promName(key);
    const known = this.gauges.get(name);
    if (known) return known.key === key ? known.gauge : null; // two keys, one name: the first keeps it
    if (this.registry.getSingleMetric(name)) return null; // a counter's name
    const gauge = new Gauge({ name, help: `metrics.jsonl "${key}" of the latest update`, labelNames: ['run'], registers: [this.registry] });
    this.gauges.set(name, { key, gauge });
    return gauge;
  }

  private async renderNow(): Promise<string> {
    const counts = await this.queues.counts();
    for (const { gauge } of this.gauges.values()) gauge.reset();
    for (const c of Object.values(this.counters)) c.reset();
    this.queueJobs.reset();
    for (const run of this.runs) {
      const labels = { run: run.name };
      const records = run.records;
      for (const [key, v] of Object.entries(records.at(-1) ?? {})) if (typeof v === 'number' && Number.isFinite(v)) this.gaugeFor(key)?.set(labels, v);
      this.counters.updates.inc(labels, records.length);
      this.counters.trajectories.inc(
        labels,
        sum(records, (r) => trajectoriesOf(r, run.cfg.rollout.groupSize)),
      );
      this.counters.dropped.inc(
        labels,
        sum(records, (r) => Number(r.groups_dropped ?? 0)),
      );
      this.counters.restarts.inc(labels, this.restartCounters.get(run.name)?.count() ?? 0);
    }
    for (const { prefix, queue, counts: c } of counts) for (const [state, n] of Object.entries(c)) this.queueJobs.set({ prefix, queue, state }, n);
    return await this.registry.metrics();
  }
}
