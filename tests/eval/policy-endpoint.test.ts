// Where eval episodes get their policy: the embedded server over a real (tiny, random) Qwen3
// checkpoint, or an external server that is told to load the adapter under evaluation.
import { describe, it, expect, afterEach } from 'vitest';
import { loadConfig } from '../../configs/load.ts';
import { ADAPTER_NAME, openPolicy, type PolicyEndpoint } from '../../eval/policy-endpoint.ts';
import { startScriptedServer, type ScriptedServer } from '../rollout/helpers/scripted-server.ts';
import { makeTinyModel } from '../serve/tiny-model.ts';

let endpoint: PolicyEndpoint | null = null;
let scripted: ScriptedServer | null = null;
afterEach(async () => {
  await endpoint?.close();
  await scripted?.close();
  endpoint = null;
  scripted = null;
});

describe('openPolicy', () => {
  it('embedded: starts serve/ over policy.model; requests name the base model', async () => {
    const tiny = makeTinyModel();
    try {
      const cfg = loadConfig([], [`policy.model=${tiny.dir}`, 'trainer.backend=cpu']);
      endpoint = await openPolicy(cfg, {});
      expect(endpoint.model).toBe(tiny.dir);
      const models = (await (await fetch(`${endpoint.baseUrl}/models`)).json()) as { data: { id: string }[] };
      expect(models.data.map((m) => m.id)).toEqual([tiny.dir]);
    } finally {
      await endpoint?.close();
      endpoint = null;
      tiny.cleanup();
    }
  });

  it('external: --adapter is loaded through /v1/load_lora_adapter and named in requests', async () => {
    scripted = await startScriptedServer(() => ({ body: {} }));
    const cfg = loadConfig([], ['policy.server=external', `policy.baseUrl=${scripted.baseUrl}`]);
    endpoint = await openPolicy(cfg, { adapter: '/ckpt/adapter' });
    expect(endpoint.model).toBe(ADAPTER_NAME);
    expect(scripted.requests).toEqual([{ path: '/v1/load_lora_adapter', auth: undefined, body: { lora_name: ADAPTER_NAME, lora_path: '/ckpt/adapter' } }]);
    const named = await openPolicy(cfg, { policyModel: 'Qwen/Qwen3-8B' });
    expect(named.model).toBe('Qwen/Qwen3-8B');
    await expect(openPolicy(cfg, { adapter: 'a', policyModel: 'b' })).rejects.toThrow('--adapter and --policy-model both name the policy; pass one');
  });
});
