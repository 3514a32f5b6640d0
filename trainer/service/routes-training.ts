// The training routes: create_model (a new LoRA on the served base, model id
// "<session>:train:<model_seq_id>" as the SDK derives it), get_info, unload_model,
// forward_backward (protobuf, optionally zstd, as the 0.25 SDK sends it; or JSON), the JSON
// forward route of older SDKs, and optim_step. Every call but get_info is a future ordered by
// seq_id on its model (state.ts). Once a call names its model and seq_id, what is wrong with
// the rest of it fails that call's future (category user), so the seq_ids after it still run.
import { randomInt } from 'node:crypto';
import { InputError } from '../../util/errors.ts';
import type { TrainingEngine } from '../engine/types.ts';
import { datumFromJson, sdkMetrics, type ForwardBackwardCall } from '../tinker/forward-backward.ts';
import { decodeForwardBackwardRequest } from '../tinker/proto-codec.ts';
import { CreateModelRequestSchema, ForwardBackwardRequestSchema, ForwardRequestSchema, ModelIdRequestSchema, OptimStepRequestSchema } from '../tinker/wire.ts';
import { engineDatum } from './engine-datum.ts';
import { badRequest } from './errors.ts';
import type { FutureResult } from './futures.ts';
import { futureReply, parseBody, type Handler, type Request } from './request.ts';
import type { ServedModel } from './state.ts';
import type { LoraSpec } from './types.ts';

/** The model's engine, or a user error when it was unloaded while the call waited its turn. */
export function engineOf(m: ServedModel): TrainingEngine {
  if (!m.engine) throw new InputError(`model ${m.id} was unloaded (or failed to build) before this call ran; create a model and load_state`);
  return m.engine;
}

const json = (body: Record<string, unknown>): FutureResult => ({ kind: 'json', body });

export const createModel: Handler = async (state, req) => {
  const r = parseBody(CreateModelRequestSchema, req);
  state.session(r.session_id);
  if (r.base_model !== state.opts.baseModel)
    throw badRequest(
      `create_model.base_model = "${r.base_model}": this server trains LoRAs on "${state.opts.baseModel}" only (get_server_capabilities lists it)`,
    );
  const lc = r.lora_config ?? { rank: 32, seed: null, train_attn: true, train_mlp: true, train_unembed: true };
  const lora: LoraSpec = {
    rank: lc.rank,
    seed: lc.seed ?? randomInt(2 ** 31),
    trainAttn: lc.train_attn,
    trainMlp: lc.train_mlp,
    trainUnembed: lc.train_unembed,
    ...(r.gsteer?.lora_alpha !== undefined ? { alpha: r.gsteer.lora_alpha } : {}),
    ...(r.gsteer?.lora_dropout !== undefined ? { dropout: r.gsteer.lora_dropout } : {}),
    ...(r.gsteer?.target_modules ? { targetModules: r.gsteer.target_modules } : {}),
  };
  const id = `${r.session_id}:train:${r.model_seq_id}`;
  const existing = state.models.get(id);
  if (existing) return futureReply(existing.bySeq.get(0)?.requestId ?? '', id);
  const m = state.addModel(r.session_id, r.model_seq_id, r.base_model, lora);
  const { requestId } = state.submit(
    'create_model',
    req.idempotencyKey,
    async () => {
      try {
        m.engine = await state.opts.createEngine({ baseModel: m.baseModel, lora });
      } catch (e) {
        state.unloadModel(m);
        throw e;
      }
      return json({ type: 'create_model', model_id: id });
    },
    { model: m, seq: 0 },
  );
  return futureReply(requestId, id);
};

export const getInfo: Handler = async (state, req) => {
  const m = state.model(parseBody(ModelIdRequestSchema, req).model_id);
  const o = state.opts;
  return {
    json: {
      type: 'get_info',
      model_id: m.id,
      model_data: { arch: o.arch, model_name: m.baseModel, tokenizer_id: o.tokenizerId },
      is_lora: true,
      lora_rank: m.lora.rank,
      model_name: m.baseModel,
      gsteer_next_seq_id: m.queue.nextSeq,
    },
  };
};

export const unloadModel: Handler = async (state, req) => {
  const m = state.model(parseBody(ModelIdRequestSchema, req).model_id);
  const { requestId } = state.submit(
    'unload_model',
    req.idempotencyKey,
    async () => {
      state.unloadModel(m);
      return json({ type: 'unload_model', model_id: m.id });
    },
    { model: m, seq: null },
  );
  return futureReply(requestId, m.id);
};

function forwardBackwardCall(req: Request, forwardOnly: boolean | null): ForwardBackwardCall {
  if (req.proto) return decodeForwardBackwardRequest(req.proto);
  const r = forwardOnly === true ? parseBody(ForwardRequestSchema, req) : parseBody(ForwardBackwardRequestSchema, req);
  const input = 'forward_input' in r ? r.forward_input : r.forward_backward_input;
  return {
    modelId: r.model_id,
    seqId: r.seq_id ?? null,
    forwardOnly: forwardOnly ?? false,
    lossFn: input.loss_fn,
    lossFnConfig: input.loss_fn_config ?? {},
    data: input.data.map((d, i) => datumFromJson(d, `${req.path} data[${i}]`)),
    ...(input.gsteer ? { gsteer: input.gsteer } : {}),
  };
}

const forwardBackwardRoute =
  (forwardOnly: boolean | null): Handler =>
  async (state, req) => {
    const call = forwardBackwardCall(req, forwardOnly);
    const route = call.forwardOnly ? 'forward' : 'forward_backward';
    if (!call.data.length) throw badRequest(`${route}: no data; send at least one datum`);
    const m = state.model(call.modelId);
    // checked inside the future: a bad datum fails this seq_id's call, and the calls after it still run
    const { requestId } = state.submit(
      route,
      req.idempotencyKey,
      async () => {
        const data = call.data.map((d, i) => engineDatum(d, i, route));
        const r = await engineOf(m).forwardBackward(data, {
          lossFn: call.lossFn,
          config: call.lossFnConfig,
          forwardOnly: call.forwardOnly,
          ...(call.gsteer ? { gsteer: call.gsteer } : {}),
        });
        return { kind: 'forward_backward', output: { lossFnOutputType: 'ArrayRecord', outputs: r.outputs, metrics: sdkMetrics(r.metrics) } };
      },
      { model: m, seq: call.seqId },
    );
    return futureReply(requestId, m.id);
  };

/** 0.25: protobuf with forward_only inside; JSON bodies are forward_backward. */
export const forwardBackward = forwardBackwardRoute(null);
/** The JSON /forward route of SDKs before 0.25. */
export const forward = forwardBackwardRoute(true);

export const optimStep: Handler = async (state, req) => {
  const r = parseBody(OptimStepRequestSchema, req);
  const m = state.model(r.model_id);
  const a = r.adam_params;
  const { requestId } = state.submit(
    'optim_step',
    req.idempotencyKey,
    async () => {
      if (
        !(a.learning_rate >= 0) ||
        !(a.beta1 >= 0 && a.beta1 < 1) ||
        !(a.beta2 >= 0 && a.beta2 < 1) ||
        !(a.eps > 0) ||
        !(a.weight_decay >= 0) ||
        !(a.grad_clip_norm >= 0)
      )
        throw badRequest(
          `optim_step.adam_params = ${JSON.stringify(a)}: need learning_rate >= 0, 0 <= beta1, beta2 < 1, eps > 0, weight_decay >= 0, grad_clip_norm >= 0 (0 = no clipping)`,
        );
      const out = await engineOf(m).optimStep(a);
      return json({ type: 'optim_step', metrics: out.metrics });
    },
    { model: m, seq: r.seq_id ?? null },
  );
  return futureReply(requestId, m.id);
};
