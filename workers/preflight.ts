// What `gsteer train` checks of the world before it creates anything (besides the dataset,
// prepare.ts): the policy model folder the embedded server and the trainer load, and every
// LLM endpoint the run will call (simulator, judge, encoder, QREF filter; the external
// policy server is waited for in train.ts), each asked GET <baseUrl>/models once under
// endpoints/'s bounded fetch. A run that would fail in its first minute fails here instead,
// with the field, the value and the fix, and leaves no run directory behind.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { RunConfig } from '../configs/schema.ts';
import { boundedFetch, maskUrl, mib } from '../endpoints/index.ts';
import { partsKind } from './load-parts.ts';

/** Problems with policy.model (synthetic parts load no model). */
export function modelProblems(cfg: RunConfig): string[] {
  if (partsKind() === 'synthetic') return [];
  const dir = cfg.policy.model;
  const fix =
    'point policy.model at a Hugging Face model folder (config.json + *.safetensors), e.g. models/tiny-demo, or make one with gsteer model init --out DIR';
  if (!existsSync(dir)) return [`policy.model = ${dir}: folder not found; ${fix}`];
  if (!statSync(dir).isDirectory()) return [`policy.model = ${dir}: a file, not a folder; ${fix}`];
  if (!existsSync(join(dir, 'config.json'))) return [`policy.model = ${dir}: no config.json in it; ${fix}`];
  if (!readdirSync(dir).some((f) => f.endsWith('.safetensors'))) return [`policy.model = ${dir}: no *.safetensors weights in it; ${fix}`];
  return [];
}

interface Remote {
  field: string;
  baseUrl: string;
  apiKeyEnv: string | undefined;
}

/** The LLM endpoints a run calls (external policy server aside). */
export function remoteEndpoints(cfg: RunConfig): Remote[] {
  const out: Remote[] = [];
  if (cfg.simulator.kind === 'llm' && cfg.simulator.baseUrl)
    out.push({ field: 'simulator.baseUrl', baseUrl: cfg.simulator.baseUrl, apiKeyEnv: cfg.simulator.apiKeyEnv });
  if (cfg.judge.kind === 'llm' && cfg.judge.baseUrl) out.push({ field: 'judge.baseUrl', baseUrl: cfg.judge.baseUrl, apiKeyEnv: cfg.judge.apiKeyEnv });
  if (cfg.encoder.kind === 'http' && cfg.encoder.baseUrl)
    out.push({ field: 'encoder.baseUrl', baseUrl: cfg.encoder.baseUrl, apiKeyEnv: cfg.encoder.apiKeyEnv });
  if (cfg.env === 'qref' && cfg.qref.filter.kind === 'llm' && cfg.qref.filter.llm)
    out.push({ field: 'qref.filter.llm.baseUrl', baseUrl: cfg.qref.filter.llm.baseUrl, apiKeyEnv: cfg.qref.filter.llm.apiKeyEnv });
  return out;
}

/** Each endpoint that does not answer, or refuses the key (404: a server without /models is fine). */
export async function endpointProblems(cfg: RunConfig, timeoutMs = 10_000): Promise<string[]> {
  const probe = async (r: Remote): Promise<string | null> => {
    const url = `${r.baseUrl.replace(/\/+$/, '')}/models`;
    const key = r.apiKeyEnv ? process.env[r.apiKeyEnv] : undefined;
    try {
      const res = await boundedFetch({ deadlineMs: timeoutMs, maxBytes: mib(4) })(url, { headers: key ? { authorization: `Bearer ${key}` } : {} });
      await res.arrayBuffer();
      if (res.status === 401 || res.status === 403)
        return `${r.field} = ${maskUrl(r.baseUrl)}: the server refused the API key (HTTP ${res.status}); set a valid key in $${r.apiKeyEnv}`;
      if (res.status >= 500) return `${r.field} = ${maskUrl(r.baseUrl)}: GET /models answered HTTP ${res.status}; check the server`;
      return null;
    } catch (e) {
      const c = (e as { cause?: { code?: string } }).cause;
      return `${r.field} = ${maskUrl(r.baseUrl)}: no answer (${c?.code ?? (e as Error).message}); start the server or fix the URL`;
    }
  };
  return (await Promise.all(remoteEndpoints(cfg).map(probe))).filter((p): p is string => p !== null);
}
