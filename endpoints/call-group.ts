// The group a call belongs to (method §14.6): a rollout or group job runs its work inside
// `withCallGroup(groupId, ...)`, and the run's sink tags every call record made inside with that
// group, carried by AsyncLocalStorage, so concurrent jobs sharing one endpoint are told apart.
// The records are summarized per update by workers/llm-calls.ts. A rollout worker also runs
// each episode inside `withCallEpisode(index, ...)`, so its calls carry the episode's index in
// its group: a resumed run keeps the records of the in-flight episodes it keeps (checkpoints/restore.ts).
import { AsyncLocalStorage } from 'node:async_hooks';
import { JsonlCallSink } from './jsonl-sink.ts';
import type { CallRecord, CallSink } from './records.ts';

/** A call record as the run stores it: the group that made the call, when known, and the episode (index in the group) of a rollout's call. */
export type RunCallRecord = CallRecord & { groupId?: string; episode?: number };

const current = new AsyncLocalStorage<string>();
const episode = new AsyncLocalStorage<number>();

/** Run `fn` with every call it makes tagged as group `groupId`'s. */
export function withCallGroup<T>(groupId: string, fn: () => Promise<T>): Promise<T> {
  return current.run(groupId, fn);
}

/** Run `fn` (one episode of a rollout job) with every call it makes tagged as episode `index` of its group. */
export function withCallEpisode<T>(index: number, fn: () => Promise<T>): Promise<T> {
  return episode.run(index, fn);
}

/** The run's sink: RUN_DIR/llm_calls.jsonl, each record tagged with the current group (and episode). */
export function runCallSink(file: string): CallSink {
  const jsonl = new JsonlCallSink(file);
  return {
    record(r) {
      const groupId = current.getStore();
      const index = episode.getStore();
      jsonl.record(groupId === undefined ? r : ({ ...r, groupId, ...(index === undefined ? {} : { episode: index }) } as RunCallRecord));
    },
  };
}
