// The layer rules (.dependency-cruiser.cjs, run by `npm run lint:deps` inside `npm test`) on a
// planted tree: an import that goes up a layer, a type-only one, a cycle inside a folder and a
// folder that is in no layer each fail, with the offending import named; the same tree without
// them passes. The repository itself is checked by lint:deps.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', allowImportingTsExtensions: true, noEmit: true } }));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

function cruise(dir: string): { code: number; out: string } {
  const r = spawnSync(process.execPath, [BIN, '--config', '.dependency-cruiser.cjs', '--output-type', 'err', '.'], { cwd: dir, encoding: 'utf8' });
  return { code: r.status ?? -1, out: `${r.stdout}${r.stderr}` };
}

const CLEAN = {
  'util/errors.ts': 'export const E = 1;\n',
  'core/tokenizer.ts': "import { E } from '../util/errors.ts';\nexport const T = E;\n",
  'configs/schema.ts': "import { T } from '../core/tokenizer.ts';\nexport const S = T;\n",
  'serve/server.ts': "import { S } from '../configs/schema.ts';\nexport const V = S;\n",
};

describe('layer rules', () => {
  it('a tree that only imports downwards passes', () => {
    const r = cruise(tree(CLEAN));
    expect(r.out).toMatch(/no dependency violations found \(4 modules, 3 dependencies cruised\)/);
    expect(r.code).toBe(0);
  });

  it('configs/ importing serve/ fails, naming the import and the rule (a cycle too)', () => {
    const r = cruise(tree({ ...CLEAN, 'configs/schema.ts': "import { V } from '../serve/server.ts';\nexport const S = 1;\nexport const W = V;\n" }));
    expect(r.code).not.toBe(0);
    expect(r.out).toMatch(/error layer-configs: configs\/schema\.ts → serve\/server\.ts/);
    expect(r.out).toMatch(/error no-circular: configs\/schema\.ts →\s+serve\/server\.ts →\s+configs\/schema\.ts/);
  });

  it('a type-only import up a layer fails the same way', () => {
    const r = cruise(tree({ ...CLEAN, 'core/tokenizer.ts': "import type { S } from '../configs/schema.ts';\nexport const T = 1;\nexport type X = S;\n" }));
    expect(r.code).not.toBe(0);
    expect(r.out).toMatch(/error layer-core: core\/tokenizer\.ts → configs\/schema\.ts/);
  });

  it('a cycle inside one folder fails', () => {
    const r = cruise(tree({ ...CLEAN, 'util/a.ts': "import { B } from './b.ts';\nexport const A = B;\n", 'util/b.ts': "import { A } from './a.ts';\nexport const B = () => A;\n" }));
    expect(r.code).not.toBe(0);
    expect(r.out).toMatch(/error no-circular: util\/(a|b)\.ts →/);
  });

  it('a folder outside the layer list fails', () => {
    const r = cruise(tree({ ...CLEAN, 'extras/x.ts': "import { E } from '../util/errors.ts';\nexport const X = E;\n" }));
    expect(r.code).not.toBe(0);
    expect(r.out).toMatch(/error no-unknown-folder: extras\/x\.ts → util\/errors\.ts/);
  });
});
