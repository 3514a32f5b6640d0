// The sampling routes: create_sampling_session (a tinker:// path, or the base model), asample
// (a future whose result goes as protobuf to the 0.25 SDK), and GET samplers/{id}. The sampler
// itself is injected (types.ts Sampler); without one, sampling calls fail with the reason.
import { InputError } from '../../util/errors.ts';
import { chunkTokens } from '../tinker/forward-backward.ts';
import { CreateSamplingSessionRequestSchema, SampleRequestSchema } from '../tinker/wire.ts';
import { badRequest, notFound } from './errors.ts';
import { futureReply, parseBody, type Handler } from './request.ts';
import type { SamplingSession, ServiceState } from './state.ts';
import type { SamplerRequest } from './types.ts';

/** A model_path (tinker://...) or the base model -> the adapter folder to sample with. */
function target(state: ServiceState, modelPath: string | null | undefined, baseModel: string | null | undefined, field: string): Omit<SamplingSession, 'id'> {
  if (modelPath) {
    const { dir, meta } = state.checkpoints.resolve(modelPath, `${field}.model_path`);
    return { baseModel: meta.base_model, modelPath, adapterDir: dir };
  }
  if (!baseModel) throw badRequest(`${field}: send model_path (tinker://...) or base_model`);
  if (baseModel !== state.opts.baseModel) throw badRequest(`${field}.base_model = "${baseModel}": this server samples "${state.opts.baseModel}" only`);
  return { baseModel, modelPath: null, adapterDir: null };
}

export const createSamplingSession: Handler = async (state, req) => {
  const r = parseBody(CreateSamplingSessionRequestSchema, req);
  const s = state.session(r.session_id);
  const id = `${r.session_id}:sample:${r.sampling_session_seq_id}`;
  if (!state.samplers.has(id)) state.samplers.set(id, { id, ...target(state, r.model_path, r.base_model, 'create_sampling_session') });
  s.samplers.add(id);
  return { json: { type: 'create_sampling_session', sampling_session_id: id } };
};

export const getSampler: Handler = async (state, req) => {
  const id = decodeURIComponent(req.path.split('/').pop() ?? '');
  const s = state.samplers.get(id);
  if (!s) throw notFound(`sampler ${id} is not open on this server; create_sampling_session makes one`);
  return { json: { sampler_id: s.id, base_model: s.baseModel, model_path: s.modelPath } };
};

function stops(stop: string | string[] | number[] | null | undefined): { stopStrings: string[]; stopTokens: number[] } {
  if (stop == null) return { stopStrings: [], stopTokens: [] };
  if (typeof stop === 'string') return { stopStrings: [stop], stopTokens: [] };
  return stop.every((x) => typeof x === 'number') ? { stopStrings: [], stopTokens: stop as number[] } : { stopStrings: stop as string[], stopTokens: [] };
}

export const asample: Handler = async (state, req) => {
  const r = parseBody(SampleRequestSchema, req);
  const sampler = state.opts.sampler;
  if (!sampler) throw badRequest('asample: this trainer service was started without a sampler (gsteer trainer serve starts one unless --no-sampler)');
  if (r.topk_prompt_logprobs > 0)
    throw badRequest(
      `asample.topk_prompt_logprobs = ${r.topk_prompt_logprobs}: gsteer's sampler returns prompt logprobs of the prompt's own tokens only; send 0`,
    );
  let t: Omit<SamplingSession, 'id'>;
  if (r.sampling_session_id) {
    const s = state.samplers.get(r.sampling_session_id);
    if (!s) throw notFound(`asample.sampling_session_id = ${r.sampling_session_id} is not open on this server; create_sampling_session first`);
    t = s;
  } else t = target(state, r.model_path, r.base_model, 'asample');
  const p = r.sampling_params;
  const job: SamplerRequest = {
    adapterDir: t.adapterDir,
    prompt: chunkTokens(r.prompt.chunks as { type?: string; tokens?: number[] }[], 'asample.prompt'),
    numSamples: r.num_samples,
    maxTokens: p.max_tokens ?? state.opts.defaultMaxTokens ?? 512,
    temperature: p.temperature,
    topP: p.top_p,
    topK: p.top_k,
    seed: p.seed ?? null,
    ...stops(p.stop),
    promptLogprobs: r.prompt_logprobs ?? false,
  };
  if (!job.prompt.length) throw new InputError('asample.prompt has no tokens; send at least one');
  // A sampling session numbers its calls: the same (session, seq_id) is the same request.
  const key = r.sampling_session_id && r.seq_id != null ? `${r.sampling_session_id}#${r.seq_id}` : req.idempotencyKey;
  const { requestId } = state.submit('asample', key, async () => ({ kind: 'sample', result: await sampler.sample(job) }));
  return futureReply(requestId);
};
