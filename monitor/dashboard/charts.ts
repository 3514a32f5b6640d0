// Which charts the dashboard draws, from the numeric keys the records hold. Pure. Known
// metrics (method §5 list, names from workers/update-metrics.ts) get their panels in reading
// order; every other numeric key still gets a chart, grouped by its prefix (`foo/a` and
// `foo/b` share the chart "foo"), so metrics added later show up without code changes.

export interface ChartSeries {
  key: string;
  /** Key of the spread drawn as a ±band around this line (`rewards/<c>/std`). */
  band?: string;
}

export interface ChartSpec {
  id: string; // stable DOM / test handle, e.g. "reward", "rewards/coverage", "other:foo"
  title: string;
  section: string;
  series: ChartSeries[];
}

/** x axes, not curves. */
export const X_KEYS = ['step', 'wall_time'];

/** Known panels in reading order: [id, title, section, matcher]. */
const PANELS: [string, string, string, (k: string) => boolean][] = [
  ['reward', 'reward (mean total reward)', 'reward', (k) => k === 'reward'],
  ['reward_std', 'reward_std (mean within-group std)', 'reward', (k) => k === 'reward_std'],
  ['frac_reward_zero_std', 'frac_reward_zero_std', 'reward', (k) => k === 'frac_reward_zero_std'],
  ['advantages', 'advantages', 'reward', (k) => k.startsWith('advantages/')],
  ['loss', 'loss', 'trainer', (k) => k === 'loss'],
  ['clip_ratio', 'clip_ratio', 'trainer', (k) => k === 'clip_ratio' || k.startsWith('clip_ratio/')],
  ['grad_norm', 'grad_norm', 'trainer', (k) => k === 'grad_norm'],
  ['entropy', 'entropy', 'trainer', (k) => k === 'entropy'],
  // PPO's critic and KL-in-reward (method §13; verl names)
  ['vf_loss', 'critic value loss', 'critic', (k) => k === 'critic/vf_loss'],
  ['vf_explained_var', 'critic explained variance', 'critic', (k) => k === 'critic/vf_explained_var'],
  ['vf_variances', 'return variance Var(G) and residual Var(G - V)', 'critic', (k) => k === 'critic/returns_var' || k === 'critic/residual_var'],
  ['vf_clipfrac', 'critic value clip fraction', 'critic', (k) => k === 'critic/vf_clipfrac'],
  ['returns', 'returns and values', 'critic', (k) => k.startsWith('critic/returns/') || k.startsWith('critic/values/')],
  ['reward_kl', 'KL penalty in the reward', 'critic', (k) => k.startsWith('actor/reward_kl')],
  ['completions', 'completion length (tokens)', 'episodes', (k) => k.startsWith('completions/')],
  ['turns', 'turns per episode (Ask / Retrieve)', 'episodes', (k) => k.startsWith('turns/')],
  ['rates', 'invalid and non-stop rates', 'episodes', (k) => k === 'invalid_rate' || k === 'nonstop_rate'],
  ['filter', 'evidence filter precision / recall (QREF)', 'episodes', (k) => k.startsWith('filter/')],
  ['policy_lag', 'policy lag (versions)', 'throughput', (k) => k === 'policy_lag'],
  ['tokens_per_second', 'tokens/s (trainer, rollout)', 'throughput', (k) => k === 'tokens_per_second' || k === 'rollout/tokens_per_second'],
  ['trajectories_per_second', 'trajectories/s (rollout)', 'throughput', (k) => k === 'trajectories_per_second'],
  ['waiting', 'waiting (s): trainer for rollouts, rollouts for the trainer', 'throughput', (k) => k.startsWith('time/')],
  ['update_seconds', 'update time (s)', 'throughput', (k) => k === 'train_seconds' || k === 'rollout_seconds'],
  ['groups', 'groups and trajectories per update', 'throughput', (k) => k === 'groups' || k === 'groups_dropped' || k === 'trajectories'],
  // LLM endpoints (workers/llm-calls.ts): llm/<role>/<name> per update, every role in one panel per kind
  ['llm_calls', 'LLM calls, errors and retries per update (by role)', 'llm', (k) => /^llm\/[^/]+\/(calls|errors|retries|cached)$/.test(k)],
  ['llm_latency', 'LLM latency p50 / p95 (ms, by role)', 'llm', (k) => /^llm\/[^/]+\/latency_p(50|95)_ms$/.test(k)],
  ['llm_tokens', 'LLM tokens per update (by role)', 'llm', (k) => /^llm\/[^/]+\/(prompt|completion)_tokens$/.test(k)],
];

const COMPONENT = /^rewards\/(.+)\/([^/]+)$/; // rewards/<component>/<stat>

/** The charts for these keys (sorted or not; the plan is the same). */
export function chartPlan(keys: readonly string[]): ChartSpec[] {
  const left = new Set([...keys].filter((k) => !X_KEYS.includes(k)).sort());
  const charts: ChartSpec[] = [];
  const take = (pred: (k: string) => boolean) => {
    const got = [...left].filter(pred);
    for (const k of got) left.delete(k);
    return got;
  };
  for (const [id, title, section, match] of PANELS) {
    const got = take(match);
    if (got.length) charts.push({ id, title, section, series: got.map((key) => ({ key })) });
    // Reward components right after the reward panels (mean with a ±std band, then any other stat).
    if (id === 'frac_reward_zero_std') charts.push(...componentCharts(take((k) => COMPONENT.test(k))));
  }
  const byPrefix = new Map<string, string[]>();
  for (const k of left) {
    const prefix = k.includes('/') ? k.slice(0, k.lastIndexOf('/')) : k;
    byPrefix.set(prefix, [...(byPrefix.get(prefix) ?? []), k]);
  }
  for (const [prefix, ks] of byPrefix) charts.push({ id: `other:${prefix}`, title: prefix, section: 'other', series: ks.map((key) => ({ key })) });
  return charts;
}

function componentCharts(keys: string[]): ChartSpec[] {
  const byComponent = new Map<string, Set<string>>();
  for (const k of keys) {
    const [, c, stat] = COMPONENT.exec(k) as RegExpExecArray;
    byComponent.set(c as string, (byComponent.get(c as string) ?? new Set()).add(stat as string));
  }
  return [...byComponent].map(([c, stats]) => {
    const series: ChartSeries[] = [];
    if (stats.has('mean')) series.push(stats.has('std') ? { key: `rewards/${c}/mean`, band: `rewards/${c}/std` } : { key: `rewards/${c}/mean` });
    else if (stats.has('std')) series.push({ key: `rewards/${c}/std` });
    for (const s of [...stats].sort()) if (s !== 'mean' && s !== 'std') series.push({ key: `rewards/${c}/${s}` });
    return {
      id: `rewards/${c}`,
      title: `reward component ${c}${stats.has('std') && stats.has('mean') ? ' (mean ± std)' : ''}`,
      section: 'reward components',
      series,
    };
  });
}
