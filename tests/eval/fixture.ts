// A small evaluation dataset for the CLI tests, written to a temp dir. Target descriptions are
// exactly the clauses the rule extractor cuts from the refined queries the tests use, so a
// covering factor has cosine 1 with its target; the tests check that every other pair stays
// below the thresholds they use (a premise of their hand-worked numbers).
//   users: u1 (has a train instance), u2 (test only); tasks: laptop (train), flat (test only)
//   seen-1  (u1, laptop) -> seen          targets a (w 2, ess), b (w 1), c (w 1, ess)
//   uu-1    (u2, laptop) -> unseen_user   targets d (w 3, ess), e (w 1)
//   ut-1    (u1, flat)   -> unseen_task   target  f (w 2, ess)
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const target = (id: string, description: string, weight: number, essential: boolean) => ({
  id,
  description,
  seedQuestion: `What about ${description}?`,
  seedAnswer: `Yes: ${description}.`,
  weight,
  essential,
});

export const INSTANCES = [
  {
    id: 'train-1',
    userId: 'u1',
    taskId: 'laptop',
    split: 'train',
    query: 'Which tablet should I get?',
    profile: 'Ecologist.',
    targets: [target('x', 'screen size preference', 1, true)],
  },
  {
    id: 'seen-1',
    userId: 'u1',
    taskId: 'laptop',
    split: 'test',
    query: 'Which laptop should I buy?',
    profile: 'Ecologist.',
    targets: [
      target('a', 'under 1200 EUR', 2, true),
      target('b', 'for an ecology PhD student', 1, false),
      target('c', 'long battery life during fieldwork', 1, true),
    ],
  },
  {
    id: 'uu-1',
    userId: 'u2',
    taskId: 'laptop',
    split: 'test',
    query: 'Which laptop is best for me?',
    targets: [target('d', 'vegetarian meals only', 3, true), target('e', 'travels with two kids', 1, false)],
  },
  {
    id: 'ut-1',
    userId: 'u1',
    taskId: 'flat',
    split: 'test',
    query: 'Where should I rent a flat?',
    profile: 'Ecologist.',
    targets: [target('f', 'with a quiet neighbourhood', 2, true)],
  },
];

export const USER_STATES = [
  {
    userId: 'u1',
    profile: 'Works in the field a lot.',
    memories: [{ name: 'budget', purpose: 'spending limit', value: 'under 1200 EUR', sourceInstance: 'train-1' }],
  },
  // u2 has no train instance: evaluation must start it empty although the file has a state.
  { userId: 'u2', profile: 'Vegetarian.', memories: [{ name: 'diet', purpose: 'meals', value: 'vegetarian meals only' }] },
];

/** Refined queries and what the rule extractor makes of them. */
export const Q_SEEN = 'Recommend a laptop under 1200 EUR, for an ecology PhD student, running Arch Linux.';
export const F_SEEN = ['under 1200 EUR', 'for an ecology PhD student', 'running Arch Linux'];
export const Q_FLAT = 'Find a flat, with a quiet neighbourhood.';
export const F_FLAT = ['with a quiet neighbourhood'];

const made: string[] = [];

/** Removes every temp dir writeDataset made (call in afterAll). */
export function removeDatasets(): void {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
}

export function writeDataset(extraConfig = ''): { dir: string; config: string; instances: string; states: string } {
  const dir = mkdtempSync(join(tmpdir(), 'gsteer-eval-'));
  made.push(dir);
  const instances = join(dir, 'instances.jsonl');
  const states = join(dir, 'user_states.jsonl');
  writeFileSync(instances, INSTANCES.map((i) => `${JSON.stringify(i)}\n`).join(''));
  writeFileSync(states, USER_STATES.map((s) => `${JSON.stringify(s)}\n`).join(''));
  const config = join(dir, 'eval.yaml');
  writeFileSync(
    config,
    `runName: eval-test\nrunDir: ${dir}/runs\ndata:\n  instances: [${instances}]\n  userStates: ${states}\ngrpo:\n  initialUserStates: ${states}\nencoder:\n  kind: embedded\n${extraConfig}`,
  );
  return { dir, config, instances, states };
}
