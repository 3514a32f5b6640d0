// The group a call belongs to (method §14.6): a rollout or group job runs its work inside
// `withCallGroup(groupId, ...)`, and the run's sink tags every call record made inside with that
// group, carried by AsyncLocalStorage, so concurrent jobs sharing one endpoint are told apart.
// The records are summarized per update by workers/llm-calls.ts.
import { AsyncLocalStorage } from 'node:async_hooks';
import { JsonlCallSink } from './jsonl-sink.ts';
import type { CallRecord, CallSink } from './records.ts';

/** A call record as the run stores it: the group that made the call, when known. */
export type RunCallRecord = CallRecord & { groupId?: string };

const current = new AsyncLocalStorage<string>();

/** Run `fn` with every call it makes tagged as group `groupId`'s. */
export function withCallGroup<T>(groupId: string, fn: () => Promise<T>): Promise<T> {
  return current.run(groupId, fn);
}

/** The run's sink: RUN_DIR/llm_calls.jsonl, each record tagged with the current group. */
export function runCallSink(file: string): CallSink {
  const jsonl = new JsonlCallSink(file);
  return {
    record(r) {
      const groupId = current.getStore();
      jsonl.record(groupId === undefined ? r : ({ ...r, groupId } as RunCallRecord));
    },
  };
}
