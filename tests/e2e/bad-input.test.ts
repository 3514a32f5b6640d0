// E2E (real CLI process): bad input stops `gsteer train` before any worker starts, with
// every validation message; an unreachable policy endpoint fails after bounded retries
// naming the URL. Nothing is created in the run directory in any of these cases.
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cli, e2eConfig, instance, tempRun, writeConfig } from './helpers.ts';

const t = tempRun('bad');
afterAll(() => rmSync(t.dir, { recursive: true, force: true }));
const runDir = join(t.dir, 'runs', 'bad');

describe('e2e: bad input', () => {
  it('config errors: all messages, exit 2, no run directory, no worker', async () => {
    const cfg = writeConfig(t.dir, e2eConfig(t, 'bad'));
    const x = await cli(['train', '--config', cfg, '--set', 'grpo.learningRate=-1', '--set', 'rollout.groupSizee=3']).done;
    expect(x.code).toBe(2);
    expect(x.stderr).toMatch(/grpo\.learningRate = -1: /);
    expect(x.stderr).toMatch(/unknown key "rollout\.groupSizee"/);
    expect(existsSync(runDir)).toBe(false);
  }, 30_000);

  it('dataset errors: every problem with file and line, exit 2, no run directory', async () => {
    const bad = join(t.dir, 'bad.jsonl');
    const broken = { ...instance(1), targets: [{ ...instance(1).targets[0], weight: -2 }] };
    writeFileSync(bad, `${JSON.stringify(instance(0))}\n{not json\n${JSON.stringify(broken)}\n`);
    const x = await cli(['train', '--config', writeConfig(t.dir, e2eConfig(t, 'bad', { data: { instances: [bad] } }))]).done;
    expect(x.code).toBe(2);
    expect(x.stderr).toMatch(/problem\(s\) before starting the run/);
    expect(x.stderr).toMatch(/bad\.jsonl:2.*not valid JSON/);
    expect(x.stderr).toMatch(/bad\.jsonl:3/);
    expect(existsSync(runDir)).toBe(false);
  }, 30_000);

  it('grpo.trainIds naming an unknown or a test-split instance: both named with the fix, exit 2', async () => {
    const data = join(t.dir, 'split.jsonl');
    writeFileSync(data, `${JSON.stringify(instance(0))}\n${JSON.stringify({ ...instance(1), split: 'test' })}\n`);
    const cfg = e2eConfig(t, 'bad', { data: { instances: [data] }, grpo: { trainIds: ['nope', instance(1).id] } });
    const x = await cli(['train', '--config', writeConfig(t.dir, cfg)]).done;
    expect(x.code).toBe(2);
    expect(x.stderr).toContain('grpo.trainIds: "nope" is not an instance id in');
    expect(x.stderr).toContain(`grpo.trainIds: "${instance(1).id}" has split "test"`);
    expect(existsSync(runDir)).toBe(false);
  }, 30_000);

  it('an init adapter of another LoRA rank is refused with the fix', async () => {
    const ad = join(t.dir, 'adapter');
    rmSync(ad, { recursive: true, force: true });
    mkdirSync(ad, { recursive: true });
    writeFileSync(join(ad, 'adapter_config.json'), JSON.stringify({ r: 16, lora_alpha: 16, target_modules: ['q_proj'] }));
    const x = await cli(['train', '--config', writeConfig(t.dir, e2eConfig(t, 'bad')), '--init-adapter', ad]).done;
    expect(x.code).toBe(2);
    expect(x.stderr).toMatch(/LoRA rank: adapter r=16, config lora\.r=8 \(set --set lora\.r=16\)/);
    expect(existsSync(runDir)).toBe(false);
  }, 30_000);

  it('an unreachable external policy server fails after bounded retries, naming the URL', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer();
      s.listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const url = `http://127.0.0.1:${port}/v1`;
    const cfg = e2eConfig(t, 'bad', { policy: { server: 'external', baseUrl: url, maxRetries: 2, model: 'models/toy' } });
    const x = await cli(['train', '--config', writeConfig(t.dir, cfg)]).done; // bounded: it exits within the test's timeout
    expect(x.code).toBe(1);
    expect(x.stderr).toContain(`policy server ${url}/models failed after 3 attempt(s)`);
    expect(existsSync(runDir)).toBe(false);
  }, 30_000);
});
