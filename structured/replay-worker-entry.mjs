// Entry of a mask-replay worker thread (structured/replay-pool.ts). Plain JS, like
// cli/gsteer.mjs: a worker thread does not inherit the TypeScript loader, so it registers
// tsx itself before importing the worker's code.
import { register } from 'tsx/esm/api';

register({ tsconfig: false });
await import('./replay-worker.ts');
