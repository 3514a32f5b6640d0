import { describe, expect, it, vi } from 'vitest';
import { join } from 'node:path';
import { validateFiles } from '../../data/validate.ts';
import { loadInstances, loadUserStates } from '../../data/load.ts';
import { datasetStats } from '../../data/stats.ts';
import { evalGroups } from '../../data/splits.ts';
import { ancestors } from '../../data/ieg.ts';
import { run as dataCommand } from '../../cli/commands/data.ts';

const dir = join(import.meta.dirname, '../../data/demo');
const instancesFile = join(dir, 'instances.jsonl');
const statesFile = join(dir, 'user_states.jsonl');

describe('demo dataset (data/demo)', () => {
  const instances = loadInstances([instancesFile]);
  const states = loadUserStates([statesFile]);

  it('validates clean, and `gsteer data validate` exits 0', async () => {
    expect(validateFiles([instancesFile, statesFile])).toEqual([]);
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      expect(await dataCommand(['validate', instancesFile, statesFile])).toBe(0);
    } finally {
      log.mockRestore();
    }
  });

  it('has the size the brief asks for', () => {
    const s = datasetStats(instances, states);
    expect(s.instances).toBeGreaterThanOrEqual(24);
    expect(s.users.total).toBeGreaterThanOrEqual(6);
    expect(s.tasks.total).toBeGreaterThanOrEqual(5);
    expect(s.lateActivatable).toBeGreaterThan(0);
    for (const i of instances) {
      expect(i.targets.length, i.id).toBeGreaterThanOrEqual(5);
      expect(i.targets.length, i.id).toBeLessThanOrEqual(12);
      const essential = i.targets.filter((t) => t.essential).length;
      expect(essential, i.id).toBeGreaterThanOrEqual(2);
      expect(essential, i.id).toBeLessThanOrEqual(4);
      expect(i.persona.length, i.id).toBeGreaterThan(0);
    }
  });

  it('every evaluation group is non-empty (method §8)', () => {
    const g = datasetStats(instances).evalGroups;
    expect(g.seen).toBeGreaterThan(0);
    expect(g.unseen_user).toBeGreaterThan(0);
    expect(g.unseen_task).toBeGreaterThan(0);
    expect(g.both_unseen).toBeGreaterThan(0);
    expect(evalGroups(instances).size).toBe(instances.filter((i) => i.split === 'test').length);
  });

  it('user states exist exactly for the train users; unseen users start empty (method §6)', () => {
    const trainUsers = new Set(instances.filter((i) => i.split === 'train').map((i) => i.userId));
    expect(new Set(states.map((s) => s.userId))).toEqual(trainUsers);
    for (const s of states) {
      expect(s.profile.trim(), s.userId).not.toBe('');
      expect(s.memories.length, s.userId).toBeGreaterThanOrEqual(2);
      expect(s.memories.length, s.userId).toBeLessThanOrEqual(4);
    }
    for (const i of instances.filter((x) => !trainUsers.has(x.userId))) expect(i.profile, i.id).toBe('');
  });

  it('memory sources name real instances of the same user', () => {
    const byId = new Map(instances.map((i) => [i.id, i]));
    for (const s of states) {
      for (const m of s.memories) {
        if (m.sourceInstance === undefined) continue;
        expect(byId.get(m.sourceInstance)?.userId, `${s.userId}/${m.name}`).toBe(s.userId);
      }
    }
  });

  it('late-activatable targets always have a parent to activate them', () => {
    for (const i of instances) {
      for (const t of i.targets) {
        if (t.lateActivatable) expect(ancestors(i, t.id).size, `${i.id}/${t.id}`).toBeGreaterThan(0);
      }
    }
  });

  it('each user has a memory that answers one of their targets and one that answers none', () => {
    // Crude lexical overlap (words of 4+ characters) between a memory value and the seed
    // answers of the same user's instances: >= 3 shared words = "answers a target",
    // <= 1 with every target = "irrelevant". Checks Retrieve has something to find and
    // something to ignore (README "Memories").
    const words = (s: string) => new Set(s.toLowerCase().match(/[\p{L}\p{N}£$€]{4,}/gu) ?? []);
    for (const s of states) {
      const answers = instances.filter((i) => i.userId === s.userId).flatMap((i) => i.targets.map((t) => words(t.seedAnswer)));
      const overlap = (value: string) => {
        const mw = words(value);
        return Math.max(...answers.map((a) => [...a].filter((w) => mw.has(w)).length));
      };
      const scores = s.memories.map((m) => overlap(m.value));
      expect(Math.max(...scores), s.userId).toBeGreaterThanOrEqual(3);
      expect(Math.min(...scores), s.userId).toBeLessThanOrEqual(1);
    }
  });
});
