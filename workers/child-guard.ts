// Preloaded (`node --import tsx --import workers/child-guard.ts ...`) into every child
// process gsteer train starts. The children run in their own process group, so a Ctrl-C
// in the terminal reaches only the controller, which then stops the run in order; and when
// the controller is gone (even SIGKILLed), the IPC channel closes and the child exits at
// once, so no orphan keeps writing into a run directory that `gsteer resume` restores.
if (process.send) process.on('disconnect', () => process.exit(70));
export {};
