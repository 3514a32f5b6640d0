import { InMemoryUserStore } from '../../rollout/user-store-memory.ts';
import { encoder, userStoreConformance } from './user-store-conformance.ts';

userStoreConformance('in-memory', {
  make: async () => new InMemoryUserStore(encoder),
  leftovers: async (store) => store.users(),
});
