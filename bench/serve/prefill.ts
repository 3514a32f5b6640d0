// Prefill tokens the policy server computes per GRPO update, with and without its prefix
// cache (not part of npm test). Usage:
//   node --import tsx bench/serve/prefill.ts [--config configs/demo.yaml] [--model models/tiny-demo]
//        [--adapter runs/demo/adapters/policy-v000004] [--updates 3] [--groups 2] [--block-size 16]
// Runs the demo's real rollouts (rollout/episode.ts: the prompt layout of rollout/prompt.ts,
// the seed-grounded simulator, an in-memory user store with data/demo's states, the config's
// group size, turns and max_tokens, seeds as the controller derives them) against two
// `gsteer serve --batching on` servers, one with --prefix-cache-mb 0, and reads what each
// computed from its /metrics. Same seeds and batch invariance: both see the same prompts
// (checked). With --adapter (e.g. the demo's trained policy) episodes run several turns.
import { parseArgs } from 'node:util';
import { loadConfig } from '../../configs/load.ts';
import { loadInstances, loadUserStates } from '../../data/load.ts';
import { createEncoder } from '../../encoders/index.ts';
import { runEpisode } from '../../rollout/episode.ts';
import { simulatorFrom } from '../../rollout/from-config.ts';
import { OpenAIPolicyClient } from '../../rollout/policy-client.ts';
import type { Trajectory } from '../../core/types.ts';
import { InMemoryUserStore } from '../../rollout/user-store-memory.ts';
import { snapshotId } from '../../rollout/user-store.ts';
import { qwen3Tokenizer } from '../../core/tokenizer.ts';
import { rolloutSeed } from '../../workers/schedule.ts';
import { serveMetric, startServe } from './serve-child.ts';

const { values } = parseArgs({
  options: {
    config: { type: 'string', default: 'configs/demo.yaml' },
    model: { type: 'string', default: 'models/tiny-demo' },
    adapter: { type: 'string' },
    updates: { type: 'string', default: '3' },
    groups: { type: 'string', default: '2' },
    'block-size': { type: 'string', default: '64' },
    backend: { type: 'string', default: 'wasm' },
  },
});

const serveWith = (extra: string[]) =>
  startServe([
    '--model',
    values.model as string,
    '--port',
    '0',
    '--backend',
    values.backend as string,
    '--batching',
    'on',
    '--block-size',
    values['block-size'] as string,
    ...extra,
    ...(values.adapter ? ['--adapter', `policy=${values.adapter}`] : []),
  ]);

async function counters(url: string): Promise<{ prompt: number; computed: number }> {
  return { prompt: await serveMetric(url, 'prompt_tokens_total'), computed: await serveMetric(url, 'prompt_tokens_computed_total') };
}

interface UpdateRow {
  episodes: number;
  turns: number;
  prompt: number;
  computed: number;
  /** First turns: G x prompt length summed over groups, and what of it was computed. */
  firstTurn: number;
  firstTurnComputed: number;
  trajectories: Trajectory[];
}

async function main(): Promise<void> {
  const cfg = loadConfig([values.config as string]);
  const G = cfg.rollout.groupSize;
  const instances = loadInstances(cfg.data.instances).filter((i) => i.split === 'train');
  const states = loadUserStates([cfg.data.userStates]);
  const encoder = await createEncoder(cfg.encoder);
  const tokenizer = qwen3Tokenizer();
  const model = values.adapter ? 'policy' : (values.model as string);
  const updates = Number(values.updates);
  const groups = Number(values.groups);

  async function run(url: string): Promise<UpdateRow[]> {
    const store = new InMemoryUserStore(encoder);
    await store.init(states);
    const policy = new OpenAIPolicyClient({ baseUrl: `${url}/v1`, apiKeyEnv: 'GSTEER_BENCH_NO_KEY', timeoutMs: 600_000, maxRetries: 0 });
    const deps = { policy, simulator: simulatorFrom(cfg, encoder), store, tokenizer };
    const rows: UpdateRow[] = [];
    for (let step = 1; step <= updates; step++) {
      const before = await counters(url);
      // an update's groups run one after the other, each group's G episodes at once (demo: rollout.concurrency = G)
      const trajectories: Trajectory[] = [];
      for (let g = 0; g < groups; g++) {
        const instance = instances[((step - 1) * groups + g) % instances.length]!;
        const snap = snapshotId(instance.userId, 1);
        const groupId = `s${step}-g${g}`;
        trajectories.push(
          ...(await Promise.all(
            Array.from({ length: G }, (_, i) =>
              runEpisode(deps, instance, {
                runId: 'bench',
                groupId,
                index: i,
                policyVersion: 0,
                model,
                snapshotId: snap,
                seed: rolloutSeed(cfg.seed, step, g, i),
                rollout: cfg.rollout,
              }),
            ),
          )),
        );
      }
      const after = await counters(url);
      const first = trajectories.map((t) => t.turns[0]!.tokens);
      rows.push({
        episodes: trajectories.length,
        turns: trajectories.reduce((n, t) => n + t.turns.length, 0),
        prompt: after.prompt - before.prompt,
        computed: after.computed - before.computed,
        firstTurn: first.reduce((n, t) => n + t.promptIds.length, 0),
        firstTurnComputed: first.reduce((n, t) => n + t.promptIds.length - (t.cachedPromptTokens ?? 0), 0),
        trajectories,
      });
    }
    return rows;
  }

  const off = await serveWith(['--prefix-cache-mb', '0']);
  const on = await serveWith([]);
  try {
    const [a, b] = [await run(off.url), await run(on.url)];
    const same = a.every(
      (r, i) =>
        JSON.stringify(r.trajectories.map((t) => t.turns.map((x) => x.tokens.promptIds))) ===
        JSON.stringify(b[i]!.trajectories.map((t) => t.turns.map((x) => x.tokens.promptIds))),
    );
    console.log(
      `\nprefill per GRPO update: ${values.config} (G = ${G}, ${groups} group(s) per update, maxTurns ${cfg.rollout.maxTurns}, maxTokens ${cfg.rollout.maxTokens}), model ${values.model}${values.adapter ? ` + ${values.adapter}` : ''}, block ${values['block-size']}`,
    );
    console.log(`same prompts on both servers: ${same ? 'yes' : 'NO'}\n`);
    console.log(
      '| update | episodes | turns | prompt tokens | computed, no cache | computed, prefix cache | cache / no cache | first turns (G x n) | first turns computed, cache |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|');
    const sum = (rows: UpdateRow[], k: 'prompt' | 'computed' | 'firstTurn' | 'firstTurnComputed' | 'turns' | 'episodes') => rows.reduce((s, r) => s + r[k], 0);
    a.forEach((r, i) => {
      const c = b[i]!;
      console.log(
        `| ${i + 1} | ${r.episodes} | ${r.turns} | ${r.prompt} | ${r.computed} | ${c.computed} | ${(c.computed / r.computed).toFixed(3)} | ${c.firstTurn} | ${c.firstTurnComputed} |`,
      );
    });
    console.log(
      `| all | ${sum(a, 'episodes')} | ${sum(a, 'turns')} | ${sum(a, 'prompt')} | ${sum(a, 'computed')} | ${sum(b, 'computed')} | ${(sum(b, 'computed') / sum(a, 'computed')).toFixed(3)} | ${sum(b, 'firstTurn')} | ${sum(b, 'firstTurnComputed')} |`,
    );
  } finally {
    for (const s of [off, on]) {
      s.proc.kill('SIGTERM');
      await new Promise((r) => s.proc.once('exit', r));
    }
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
