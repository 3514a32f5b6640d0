// The layer rules of gsteer (README "Layers"), checked by `npm run lint:deps` inside `npm test`.
// Each top-level folder may import only the folders its line in ALLOW names (type-only imports
// too: tsPreCompilationDeps), and nothing may form a cycle. The lists are the import graph as
// it is: two towers on a shared ground floor (training: data -> reward -> rollout -> trainer;
// serving: model -> structured -> serve) meeting in workers/, with eval/ and cli/ on top. The
// folders' graph must stay acyclic (checked below when this file loads), so no arrow goes back
// up. tests/, bench/ and docs/ sit above everything and are not checked. A violation prints the
// importing file, the imported file and the rule, e.g.
// "layer-configs: configs/schema.ts → serve/server.ts".

const GROUND = ['util', 'core', 'endpoints', 'configs'];

/** Folder -> the folders it may import (besides itself). */
const ALLOW = {
  // the shared ground floor
  util: [],
  core: ['util'], // core/trajectory-file.ts: trajectory files through util's errors, JSONL and run-file writes
  endpoints: ['util'],
  configs: ['util', 'core', 'endpoints'],
  // services beside endpoints/
  encoders: GROUND,
  // the training tower
  data: GROUND,
  reward: ['util', 'core', 'configs', 'data'],
  rollout: [...GROUND, 'encoders', 'data', 'reward', 'structured'],
  trainer: [...GROUND, 'encoders', 'data', 'model', 'structured'], // no environment, no server: grammars and examples arrive as data
  // the serving tower
  model: ['util', 'core', 'configs'],
  structured: ['util', 'core', 'model'],
  serve: ['util', 'core', 'model', 'structured'],
  // run files and metrics, read by the workers, the dashboard and resume
  checkpoints: ['util', 'core', 'configs', 'model', 'reward'],
  monitor: ['util', 'core', 'configs', 'checkpoints', 'rollout'],
  // where the towers meet: queues, controller, rollout / group / trainer workers
  workers: [...GROUND, 'data', 'reward', 'rollout', 'trainer', 'model', 'structured', 'checkpoints', 'monitor'],
  // on top
  eval: [...GROUND, 'encoders', 'data', 'rollout', 'trainer', 'model', 'structured', 'serve', 'workers'], // trainer/, model/: the SFT turn eval (eval/sft-turns.ts)
  cli: [...GROUND, 'encoders', 'data', 'reward', 'rollout', 'trainer', 'model', 'structured', 'serve', 'checkpoints', 'monitor', 'workers', 'eval'],
};
const FOLDERS = Object.keys(ALLOW);

/** A folder graph with a cycle would let two folders import each other: refuse to load. */
function assertAcyclic(graph) {
  const state = new Map(); // folder -> 'open' | 'done'
  const visit = (folder, path) => {
    if (state.get(folder) === 'done') return;
    if (state.get(folder) === 'open') {
      const cycle = [...path.slice(path.indexOf(folder)), folder].join(' -> ');
      throw new Error(`.dependency-cruiser.cjs: the allow-lists form a cycle (${cycle}); a folder may only import folders below it`);
    }
    state.set(folder, 'open');
    for (const to of graph[folder]) {
      if (!(to in graph)) throw new Error(`.dependency-cruiser.cjs: ALLOW.${folder} names "${to}", which has no line of its own in ALLOW`);
      visit(to, [...path, folder]);
    }
    state.set(folder, 'done');
  };
  for (const folder of Object.keys(graph)) visit(folder, []);
}
assertAcyclic(ALLOW);

// An import from a folder into any top-level folder outside its list. (tests/, bench/ and docs/
// are left out of the cruise, so an import into them goes unseen here.) Node's own modules and
// unresolved names are no folder; npm packages resolve to node_modules/ (or, through a linked
// node_modules, a path starting with "../"), which the pattern leaves out.
const layerRules = FOLDERS.map((folder) => ({
  name: `layer-${folder}`,
  severity: 'error',
  comment: `${folder}/ may import only: ${ALLOW[folder].join(', ') || '(nothing outside itself)'} (ALLOW in .dependency-cruiser.cjs)`,
  from: { path: `^${folder}/` },
  to: { dependencyTypesNot: ['core', 'unknown', 'undetermined'], path: '^[^./][^/]*/', pathNot: `^(${[folder, ...ALLOW[folder], 'node_modules'].join('|')})/` },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'This import closes a cycle between modules; move the shared part down a layer.',
      from: { pathNot: '^(tests|bench|docs)/' },
      to: { circular: true },
    },
    {
      name: 'no-unknown-folder',
      severity: 'error',
      comment: 'Every source folder must have a line in ALLOW (.dependency-cruiser.cjs) so what it may import is explicit.',
      from: { path: '^[^/]+/', pathNot: `^(${FOLDERS.join('|')}|tests|bench|docs|node_modules)/` },
      to: {},
    },
    ...layerRules,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // tests, benchmarks and docs sit above every layer; top-level config files are not layers.
    exclude: { path: ['^(node_modules|runs|models|tests|bench|docs)/', '^[^/]+\\.(ts|mts|cjs|mjs|js)$'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.mjs', '.js'] },
  },
};
