// Entry of the trainer's worker thread (workers/trainer-thread.ts): plain JS, so it can
// register the TypeScript loader in the thread before it loads the TypeScript side.
import { register } from 'tsx/esm/api';

register({ tsconfig: false });
await import('./trainer-thread-main.ts');
