// Loading the initial user states (data.userStates, e.g. data/demo/user_states.jsonl) into a
// store as version 1 of each user. Validation (file, line, field, value, rule, fix) is
// data/load.ts's; this only writes, with a progress bar for big files.
import { loadUserStates } from '../data/load.ts';
import { progressBar } from '../util/progress.ts';
import type { UserStore } from './user-store.ts';

export async function loadInitialUserStates(store: UserStore, files: readonly string[]): Promise<number> {
  const states = loadUserStates(files);
  const bar = states.length >= 100 ? progressBar('user states', states.length) : null;
  const chunk = 50; // embed and write in chunks so the bar moves
  for (let i = 0; i < states.length; i += chunk) {
    const part = states.slice(i, i + chunk);
    await store.init(part);
    bar?.tick(part.length);
  }
  bar?.done();
  return states.length;
}
