// The CLI's front door (issue 32 item 7): every faulty command line of faulty-inputs.ts, run
// in process through main() (bench/cli/front-door.ts runs the same list through the real CLI
// and prints the table), exits with its code (2, or 1 where data validate found problems),
// says what the input must say, and never throws (a throw out of main() is the stack trace
// and exit 1 that cli/gsteer.mjs prints). The inputs that would start work (train) fail in
// their checks, before anything starts; GSTEER_PARTS is synthetic so no model is loaded.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../cli/main.ts';
import { faultyInputs, makeFixtures } from './faulty-inputs.ts';

const dir = mkdtempSync(join(tmpdir(), 'gsteer-front-door-'));
const fx = makeFixtures(dir);
const cwd = process.cwd();
beforeAll(() => {
  process.chdir(join(import.meta.dirname, '../..'));
  process.env.GSTEER_PARTS = 'synthetic';
});
afterAll(() => {
  process.chdir(cwd);
  delete process.env.GSTEER_PARTS;
  rmSync(dir, { recursive: true, force: true });
});

// The server-starting inputs are refused before a model loads; the slow ones (model loading) are the CLI table's.
const cases = faultyInputs(fx).filter(
  (c) => !(c.argv[0] === 'serve' && !c.argv.includes('--host') && c.argv.includes('--model') && !c.argv.includes('--port') && c.argv.length <= 3),
);

describe('faulty command lines: exit code and message, never a throw', () => {
  it.each(cases.map((c) => [c.label, c] as const))(
    '%s',
    async (_label, c) => {
      const out: string[] = [];
      const keep = (...a: unknown[]) => void out.push(a.map(String).join(' '));
      const spies = [
        vi.spyOn(console, 'log').mockImplementation(keep),
        vi.spyOn(console, 'error').mockImplementation(keep),
        vi.spyOn(process.stdout, 'write').mockImplementation((s) => (keep(s), true)),
        vi.spyOn(process.stderr, 'write').mockImplementation((s) => (keep(s), true)),
      ];
      let code: number;
      Object.assign(process.env, c.env ?? {});
      try {
        code = await main(c.argv);
      } finally {
        for (const s of spies) s.mockRestore();
        process.env.GSTEER_PARTS = 'synthetic';
      }
      const said = out.join('\n');
      expect(code, said).toBe(c.code ?? 2);
      if (c.says) expect(said).toMatch(c.says);
      expect(said).not.toMatch(/\n\s+at \S+ \(.*:\d+:\d+\)/); // no stack frame
    },
    60_000,
  );
});
