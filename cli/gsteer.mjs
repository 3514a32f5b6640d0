#!/usr/bin/env node
// The one entry point of the `gsteer` CLI, however it is reached: the package bin (npx,
// npm exec, npm link, a global install, node_modules/.bin), a symlink, `node cli/gsteer.mjs`,
// `npm run gsteer --`, and the child processes `gsteer train` starts. It always runs: no
// guessing from process.argv[1], which a bin link or symlink does not name. Plain JS so
// Node can start it before the TypeScript loader is registered; cli/main.ts is a module
// with no side effects (tests import `main` from it).
import { register } from 'tsx/esm/api';

// tsconfig: false: gsteer's sources need no compiler options to run, and a tsconfig.json in
// the user's working directory (tsx's default lookup) must not change how they compile.
register({ tsconfig: false });
try {
  const { main } = await import('./main.ts');
  // process.exit, not exitCode: a command's open handles (Redis, servers) must not keep
  // the process alive after it has returned its code.
  process.exit(await main(process.argv.slice(2)));
} catch (e) {
  console.error(e instanceof Error ? (e.stack ?? e.message) : e);
  process.exit(1);
}
