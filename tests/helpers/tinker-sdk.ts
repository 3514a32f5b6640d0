// Where the official Tinker Python SDK 0.25.0 (the conformance peer) is on this machine, and
// whether python3 can import it. Looked for, in order: $TINKER_SDK_SRC (the SDK's src/ folder),
// then shared/peers/tinker-sdk-0.25.0/src beside the checkout (CI clones main with shared/
// beside it) or beside a worktree's parent folder. Tests that need it say plainly when it is
// absent; under CI=true its absence is a failure, not a skip.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

const REPO = resolve(import.meta.dirname, '../..');

function candidates(): string[] {
  const rel = 'shared/peers/tinker-sdk-0.25.0/src';
  return [process.env.TINKER_SDK_SRC ?? '', join(REPO, '..', rel), join(REPO, '..', '..', rel)].filter(Boolean);
}

export interface TinkerSdk {
  /** The SDK's src/ folder (what goes on PYTHONPATH). */
  src: string;
  /** Environment for python3 with the SDK importable. */
  env: NodeJS.ProcessEnv;
}

/** The SDK when python3 imports it here; otherwise the reason it cannot. */
export function findTinkerSdk(): TinkerSdk | { missing: string } {
  const src = candidates().find((c) => existsSync(join(c, 'tinker', '__init__.py')));
  if (!src) return { missing: `the Tinker SDK 0.25.0 is not at any of ${candidates().join(', ')}; set TINKER_SDK_SRC to its src/ folder` };
  const env = { ...process.env, PYTHONPATH: src };
  const probe = spawnSync(
    'python3',
    ['-c', "import sys; sys.path.append('/usr/lib/python3/dist-packages'); import tinker, zstandard; print(tinker.__version__)"],
    { env, encoding: 'utf8' },
  );
  if (probe.status !== 0)
    return {
      missing: `python3 cannot import the Tinker SDK from ${src}: ${(probe.stderr || String(probe.error)).trim().split('\n').pop()} (install the Debian packages shared/peers/README.md names; .ci/run does)`,
    };
  return { src, env };
}

/** Run tests/conformance/sdk_codec.py with `cmd`, JSON in and out. */
export function sdkCodec(sdk: TinkerSdk, cmd: string, input: unknown = {}): unknown {
  const out = execFileSync('python3', [join(REPO, 'tests/conformance/sdk_codec.py'), cmd], { env: sdk.env, input: JSON.stringify(input), encoding: 'utf8' });
  return JSON.parse(out);
}
