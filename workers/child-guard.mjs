// Preloaded (`node --import workers/child-guard.mjs ...`) into every child process gsteer
// train starts. The children run in their own process group, so a Ctrl-C in the terminal
// reaches only the controller, which then stops the run in order; and when the controller
// is gone (even SIGKILLed), the IPC channel closes and the child exits at once, so no
// orphan keeps writing into a run directory that `gsteer resume` restores. Plain JS: it
// loads before cli/gsteer.mjs registers the TypeScript loader.
if (process.send) process.on('disconnect', () => process.exit(70));
