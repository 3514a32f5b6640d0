// The layer rules of gsteer (README "Layers"), checked by `npm run lint:deps` inside `npm test`.
// A folder may import only from folders below it in LAYERS (type-only imports too:
// tsPreCompilationDeps), and nothing may form a cycle. tests/, bench/ and docs/ sit above
// everything and are not checked. A violation prints the importing file, the imported file
// and the rule's name, e.g. "layer-configs: configs/schema.ts → serve/server.ts".
/** Bottom to top. */
const LAYERS = [
  'util',
  'core',
  'endpoints',
  'configs',
  'model',
  'structured',
  'data',
  'reward',
  'rollout',
  'serve',
  'trainer',
  'checkpoints',
  'monitor',
  'workers',
  'eval',
  'cli',
];

const layerRules = LAYERS.map((layer, i) => {
  const above = LAYERS.slice(i + 1);
  return {
    name: `layer-${layer}`,
    severity: 'error',
    comment: `${layer}/ may import only from the folders below it: ${LAYERS.slice(0, i).join(', ') || '(none)'}`,
    from: { path: `^${layer}/` },
    to: { path: above.length ? `^(${above.join('|')})/` : '^$' },
  };
}).filter((r) => r.to.path !== '^$');

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
      comment: 'Every source folder must be in LAYERS (.dependency-cruiser.cjs) so its place in the order is explicit.',
      from: { path: '^[^/]+/', pathNot: `^(${LAYERS.join('|')}|tests|bench|docs|node_modules)/` },
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
