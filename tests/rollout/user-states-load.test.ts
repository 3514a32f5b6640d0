// Loading initial user states (data.userStates) into a store as version 1.
import { describe, it, expect } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HashedEncoder } from '../../reward/encoders/hashed.ts';
import { loadInitialUserStates } from '../../rollout/user-states-load.ts';
import { InMemoryUserStore } from '../../rollout/user-store-memory.ts';
import { InputError } from '../../util/errors.ts';

const dir = mkdtempSync(join(tmpdir(), 'gsteer-rollout-'));

describe('loadInitialUserStates', () => {
  it('writes version 1 of every user in the file', async () => {
    const file = join(dir, 'user_states.jsonl');
    writeFileSync(file, [
      JSON.stringify({ userId: 'a', profile: 'Likes R.', memories: [{ name: 'budget', purpose: 'spending limit', value: '1200 EUR', sourceInstance: 'x' }] }),
      JSON.stringify({ userId: 'b' }),
    ].join('\n'));
    const store = new InMemoryUserStore(new HashedEncoder(64));
    expect(await loadInitialUserStates(store, [file])).toBe(2);
    expect((await store.users()).sort()).toEqual(['a', 'b']);
    const a = await store.read('a', 1);
    expect([a.profile, a.memories.map((m) => [m.name, m.value, m.sourceInstance])]).toEqual(['Likes R.', [['budget', '1200 EUR', 'x']]]);
    expect(await store.read('b', 1)).toEqual({ userId: 'b', version: 1, profile: '', memories: [] });
  });

  it('refuses a bad file naming file and line, writing nothing', async () => {
    const file = join(dir, 'user_states_bad.jsonl');
    writeFileSync(file, `${JSON.stringify({ userId: 'a' })}\n${JSON.stringify({ userId: 'b', memories: [{ name: 'n', purpose: 'p' }] })}\n`);
    const store = new InMemoryUserStore(new HashedEncoder(64));
    const e = await loadInitialUserStates(store, [file]).catch((x) => x);
    expect(e).toBeInstanceOf(InputError);
    expect(e.message).toContain(`${file}:2`);
    expect(await store.users()).toEqual([]);
  });
});
