// The benches' names for the orchestration shortcuts they turn off (`--modes`, comma lists,
// `all` = the behaviour before them), as overrides of the run config's `orchestrator` block
// (configs/schema.ts), which is where the switches live:
//   events   -> orchestrator.events false (the controller polls every queues.pollMs only)
//   early    -> orchestrator.earlyAdmission false
//   promote  -> orchestrator.promoteGroups false
//   fsync    -> orchestrator.fsyncRunFiles true
//   fetchers -> orchestrator.rolloutFetchers 1
//   sparse   -> orchestrator.sparseGroupPolls false
const OFF = {
  events: { events: false },
  early: { earlyAdmission: false },
  promote: { promoteGroups: false },
  fsync: { fsyncRunFiles: true },
  fetchers: { rolloutFetchers: 1 },
  sparse: { sparseGroupPolls: false },
} as const;

export function shortcutsOff(list: string): Record<string, boolean | number> {
  const names = list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const out: Record<string, boolean | number> = {};
  for (const n of names) {
    if (n === 'all') Object.assign(out, ...Object.values(OFF));
    else if (n in OFF) Object.assign(out, OFF[n as keyof typeof OFF]);
    else throw new Error(`--modes: unknown shortcut "${n}"; expected a comma list of ${Object.keys(OFF).join(', ')} or "all"`);
  }
  return out;
}
