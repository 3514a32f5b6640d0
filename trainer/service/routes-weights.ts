// The state routes: save_weights (save_state: adapter + optimizer state), load_weights
// (load_state, with or without the optimizer; also the create-via-load form that builds the
// model from the checkpoint's own LoRA config), save_weights_for_sampler (the PEFT adapter
// folder a sampler loads; without a name, an ephemeral one behind a new sampling session, as
// save_weights_and_get_sampling_client asks), and weights_info (what
// create_training_client_from_state reads to rebuild the LoRA before loading).
import { randomUUID } from 'node:crypto';
import { InputError } from '../../util/errors.ts';
import { LoadWeightsRequestSchema, SaveWeightsForSamplerRequestSchema, SaveWeightsRequestSchema, WeightsInfoRequestSchema } from '../tinker/wire.ts';
import { checkName, type CheckpointKind } from './checkpoints.ts';
import { badRequest } from './errors.ts';
import type { FutureResult } from './futures.ts';
import { futureReply, parseBody, type Handler } from './request.ts';
import { engineOf } from './routes-training.ts';
import type { ServedModel, ServiceState } from './state.ts';

const json = (body: Record<string, unknown>): FutureResult => ({ kind: 'json', body });

function save(state: ServiceState, m: ServedModel, kind: CheckpointKind, name: string, overwrite: boolean): Promise<string> {
  const optimizer = kind === 'weights';
  return state.checkpoints.write({ kind, model_id: m.id, base_model: m.baseModel, lora: m.lora, optimizer }, name, overwrite, (dir) =>
    engineOf(m).save(dir, { optimizer }),
  );
}

export const saveWeights: Handler = async (state, req) => {
  const r = parseBody(SaveWeightsRequestSchema, req);
  const m = state.model(r.model_id);
  const name = r.path ?? `step-${randomUUID()}`;
  const { requestId } = state.submit(
    'save_weights',
    req.idempotencyKey,
    async () => {
      checkName(name, 'save_weights.path');
      return json({ type: 'save_weights', path: await save(state, m, 'weights', name, r.overwrite) });
    },
    { model: m, seq: r.seq_id ?? null },
  );
  return futureReply(requestId, m.id);
};

export const saveWeightsForSampler: Handler = async (state, req) => {
  const r = parseBody(SaveWeightsForSamplerRequestSchema, req);
  const m = state.model(r.model_id);
  const { requestId } = state.submit(
    'save_weights_for_sampler',
    req.idempotencyKey,
    async () => {
      if (r.path) checkName(r.path, 'save_weights_for_sampler.path');
      else if (r.sampling_session_seq_id == null)
        throw badRequest(
          'save_weights_for_sampler: send a path (a name for the weights) or a sampling_session_seq_id (ephemeral weights behind a new sampling session)',
        );
      if (r.path) return json({ type: 'save_weights_for_sampler', path: await save(state, m, 'sampler_weights', r.path, true) });
      const path = await save(state, m, 'sampler_weights', `ephemeral-${randomUUID()}`, false);
      const id = `${m.sessionId}:sample:${r.sampling_session_seq_id}`;
      state.samplers.set(id, { id, baseModel: m.baseModel, modelPath: path, adapterDir: state.checkpoints.resolve(path, 'path').dir });
      state.sessions.get(m.sessionId)?.samplers.add(id);
      return json({ type: 'save_weights_for_sampler', sampling_session_id: id });
    },
    { model: m, seq: r.seq_id ?? null },
  );
  return futureReply(requestId, m.id);
};

export const loadWeights: Handler = async (state, req) => {
  const r = parseBody(LoadWeightsRequestSchema, req);
  const checkpoint = () => {
    const c = state.checkpoints.resolve(r.path, 'load_weights.path');
    if (r.optimizer && !c.meta.optimizer)
      throw badRequest(
        `load_weights: ${r.path} holds no optimizer state (save_weights_for_sampler writes weights only); load it with optimizer = false (load_state)`,
      );
    return c;
  };
  let m: ServedModel;
  let seq: number | null;
  let build = false;
  if (r.session_id != null && r.model_seq_id != null) {
    // create-via-load: the load is the model's first call (seq 0) and builds it from the checkpoint's LoRA
    state.session(r.session_id);
    const id = `${r.session_id}:train:${r.model_seq_id}`;
    build = !state.models.has(id);
    const { meta } = checkpoint();
    m = build ? state.addModel(r.session_id, r.model_seq_id, r.base_model ?? meta.base_model, meta.lora) : state.model(id);
    seq = 0;
  } else {
    if (!r.model_id) throw badRequest('load_weights: send model_id (with seq_id), or session_id with model_seq_id (create-via-load)');
    m = state.model(r.model_id);
    seq = r.seq_id ?? null;
  }
  const target = m;
  const { requestId } = state.submit(
    'load_weights',
    req.idempotencyKey,
    async () => {
      const { dir, meta } = checkpoint();
      if (meta.base_model !== target.baseModel)
        throw badRequest(`load_weights: ${r.path} was trained on "${meta.base_model}", this model's base is "${target.baseModel}"`);
      if (meta.lora.rank !== target.lora.rank)
        throw badRequest(
          `load_weights: ${r.path} has LoRA rank ${meta.lora.rank}, this model ${target.lora.rank}; create the model with rank ${meta.lora.rank} (weights_info tells it)`,
        );
      if (build) {
        try {
          target.engine = await state.opts.createEngine({ baseModel: target.baseModel, lora: target.lora });
        } catch (e) {
          state.unloadModel(target);
          throw e;
        }
      }
      await engineOf(target).load(dir, { optimizer: r.optimizer });
      return json({ type: 'load_weights', path: r.path, model_id: target.id });
    },
    { model: m, seq },
  );
  return futureReply(requestId, m.id);
};

export const weightsInfo: Handler = async (state, req) => {
  const r = parseBody(WeightsInfoRequestSchema, req);
  const { meta } = state.checkpoints.resolve(r.tinker_path, 'weights_info.tinker_path');
  if (!meta.lora) throw new InputError(`weights_info: ${r.tinker_path} has no LoRA config in its meta`);
  return {
    json: {
      base_model: meta.base_model,
      is_lora: true,
      lora_rank: meta.lora.rank,
      train_unembed: meta.lora.trainUnembed,
      train_mlp: meta.lora.trainMlp,
      train_attn: meta.lora.trainAttn,
    },
  };
};
