// The PLAN line of a scaffolded turn (paper: "Plan summarizes state changes and explains
// the next action"): "<what changed>; <next action and why>". Template text over slot
// names, so the policy learns to say what it saw and why it acts; one line, no `|` needed.

export type StopReason = 'complete' | 'stop_point' | 'turn_budget';

/** What the last observation changed (first turn: the factors the request calls for). */
export type Change =
  | { kind: 'start'; slots: string[] }
  | { kind: 'memory'; covered: string[]; missed: string[] }
  | { kind: 'answer'; covered: string }
  | { kind: 'activated'; slots: string[] };

export type Next = { kind: 'retrieve'; slots: string[] } | { kind: 'ask'; slot: string } | { kind: 'stop'; reason: StopReason };

/** Slot name of a target id (the canonical slot name, data/sft/memory.ts slotOf). */
export type SlotName = (id: string) => string;

function describeChange(c: Change, name: SlotName): string {
  const list = (xs: readonly string[]) => xs.map(name).join(', ');
  switch (c.kind) {
    case 'start':
      return c.slots.length ? `new request; factors to ground: ${list(c.slots)}` : 'new request; no user-specific factor needed';
    case 'memory': {
      const parts = [];
      if (c.covered.length) parts.push(`memory covered ${list(c.covered)}`);
      if (c.missed.length) parts.push(`nothing in memory for ${list(c.missed)}`);
      return parts.join('; ');
    }
    case 'answer':
      return `the user answered ${name(c.covered)}`;
    case 'activated':
      return `now relevant: ${list(c.slots)}`;
    default: {
      const never: never = c;
      throw new Error(`internal: unknown change ${JSON.stringify(never)}`);
    }
  }
}

function describeNext(n: Next, name: SlotName): string {
  const list = (xs: readonly string[]) => xs.map(name).join(', ');
  switch (n.kind) {
    case 'retrieve':
      return `check memory for ${list(n.slots)}`;
    case 'ask':
      return `ask the user about ${name(n.slot)}, not in memory`;
    case 'stop':
      switch (n.reason) {
        case 'complete':
          return 'all relevant factors are covered; stop with the refined query';
        case 'stop_point':
          return 'enough evidence for the key factors; stop with the refined query';
        case 'turn_budget':
          return 'turn budget reached; stop with the refined query';
        default: {
          const never: never = n.reason;
          throw new Error(`internal: unknown stop reason ${String(never)}`);
        }
      }
    default: {
      const never: never = n;
      throw new Error(`internal: unknown next action ${JSON.stringify(never)}`);
    }
  }
}

export function planText(changes: readonly Change[], next: Next, name: SlotName = (id) => id): string {
  return [...changes.map((c) => describeChange(c, name)).filter(Boolean), describeNext(next, name)].join('; ');
}
