// The layer rules (.dependency-cruiser.cjs, run by `npm run lint:deps` inside `npm test`): each
// folder imports only the folders its allow-list names. On a planted tree: an import outside the
// list (including ones a ladder of layers could not forbid: checkpoints/ -> trainer/, serve/ ->
// reward/, data/ -> model/), a type-only one, a cycle inside a folder and a folder with no
// allow-list each fail, naming both files and the rule; the same tree without them passes. An
// allow-list that would let two folders import each other is refused when the config loads.
// And the repository as it is passes.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const REPO = new URL('../..', import.meta.url).pathname;
const BIN = join(REPO, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs');
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'gsteer-layers-'));
  dirs.push(dir);
  copyFileSync(join(REPO, '.dependency-cruiser.cjs'), join(dir, '.dependency-cruiser.cjs'));
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', allowImportingTsExtensions: true, noEmit: true } }),
  );
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

function cruise(dir: string): { code: number; out: string } {
  // The CLI, as lint:deps runs it; its own output names the rule and both files.
  const r = spawnSync(process.execPath, [BIN, '--config', '.dependency-cruiser.cjs', '--output-type', 'err', '.'], { cwd: dir, encoding: 'utf8' });
  return { code: r.status ?? -1, out: `${r.stdout}${r.stderr}` };
}

/** Each file imports one folder from its allow-list. */
const CLEAN = {
  'util/errors.ts': 'export const E = 1;\n',
  'core/tokenizer.ts': 'export const T = 1;\n',
  'configs/schema.ts': "import { T } from '../core/tokenizer.ts';\nimport { E } from '../util/errors.ts';\nexport const S = T + E;\n",
  'model/qwen3.ts': "import { S } from '../configs/schema.ts';\nexport const Q = S;\n",
  'serve/server.ts': "import { Q } from '../model/qwen3.ts';\nexport const V = Q;\n",
  'data/schema.ts': "import { S } from '../configs/schema.ts';\nexport const D = S;\n",
  'reward/types.ts': "import { D } from '../data/schema.ts';\nexport const R = D;\n",
  'trainer/step.ts': "import { Q } from '../model/qwen3.ts';\nexport const P = Q;\n",
  'checkpoints/checkpoint.ts': "import { R } from '../reward/types.ts';\nexport const C = R;\n",
};

/** One tree, one cruise (each run of the CLI costs seconds): every planted import at once. */
const PLANTED = {
  ...CLEAN,
  // imports a ladder of layers could not forbid (the old one let each of these through)
  'checkpoints/planted.ts': "import { P } from '../trainer/step.ts';\nexport const X = P;\n",
  'serve/planted.ts': "import { R } from '../reward/types.ts';\nexport const X = R;\n",
  'data/planted.ts': "import { Q } from '../model/qwen3.ts';\nexport const X = Q;\n",
  // across the towers the other way
  'model/planted.ts': "import { D } from '../data/schema.ts';\nexport const X = D;\n",
  // up from the ground floor, and type-only
  'configs/planted.ts': "import { V } from '../serve/server.ts';\nexport const X = V;\n",
  'core/planted.ts': "import type { S } from '../configs/schema.ts';\nexport type X = typeof S;\n",
  // a cycle inside one folder, and a folder with no allow-list
  'util/a.ts': "import { B } from './b.ts';\nexport const A = B;\n",
  'util/b.ts': "import { A } from './a.ts';\nexport const B = () => A;\n",
  'extras/x.ts': "import { E } from '../util/errors.ts';\nexport const X = E;\n",
};

describe('layer rules', () => {
  it('a tree whose every import is in its allow-list passes', () => {
    const r = cruise(tree(CLEAN));
    expect(r.out).toMatch(/no dependency violations found \(9 modules, 8 dependencies cruised\)/);
    expect(r.code).toBe(0);
  });

  it('each planted import fails, naming the rule, the importing and the imported file; nothing else does', () => {
    const r = cruise(tree(PLANTED));
    expect(r.code).not.toBe(0);
    const named = r.out
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => /^error (layer-|no-unknown-folder)/.test(l));
    expect(named.sort()).toEqual([
      'error layer-checkpoints: checkpoints/planted.ts → trainer/step.ts',
      'error layer-configs: configs/planted.ts → serve/server.ts',
      'error layer-core: core/planted.ts → configs/schema.ts',
      'error layer-data: data/planted.ts → model/qwen3.ts',
      'error layer-model: model/planted.ts → data/schema.ts',
      'error layer-serve: serve/planted.ts → reward/types.ts',
      'error no-unknown-folder: extras/x.ts → util/errors.ts',
    ]);
    expect(r.out).toMatch(/error no-circular: util\/(a|b)\.ts →\s+util\/(a|b)\.ts →/);
  });

  it('an allow-list that closes a cycle between folders is refused when the config loads', () => {
    const dir = tree({});
    const text = readFileSync(join(dir, '.dependency-cruiser.cjs'), 'utf8');
    expect(text).toContain('  util: [],\n');
    writeFileSync(join(dir, 'cyclic.cjs'), text.replace('  util: [],\n', "  util: ['configs'],\n"));
    expect(() => createRequire(join(dir, 'x.cjs'))('./cyclic.cjs')).toThrow(
      /the allow-lists form a cycle \((util -> configs -> util|configs -> util -> configs)\)/,
    );
  });

  it('the repository as it is passes', () => {
    const r = spawnSync(process.execPath, [BIN, '--config', '.dependency-cruiser.cjs', '--output-type', 'err', '.'], { cwd: REPO, encoding: 'utf8' });
    expect(`${r.stdout}${r.stderr}`).toMatch(/no dependency violations found/);
    expect(r.status).toBe(0);
  }, 120_000);
});
