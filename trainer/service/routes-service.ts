// Session and service routes: healthz, get_server_capabilities (the one base this server
// trains, and gsteer's extension listing what it supports), client/config (the flags the SDK
// reads before anything else: no JWT exchange, httpx's own transport since pyqwest is not
// installed with it, zstd-compressed forward_backward bodies), client/dynamic_config,
// create_session, session_heartbeat, telemetry (accepted and dropped: nothing leaves the
// machine), and retrieve_future (long-polled; try_again while pending; protobuf results for
// clients that accept them).
import { encodeForwardBackwardOutput, encodeSampleResponse } from '../tinker/proto-codec.ts';
import { outputToJson } from '../tinker/forward-backward.ts';
import { sampleResultToJson } from '../tinker/sample.ts';
import { CreateSessionRequestSchema, FutureRetrieveRequestSchema, SessionHeartbeatRequestSchema } from '../tinker/wire.ts';
import { ServiceError } from './errors.ts';
import type { FutureResult } from './futures.ts';
import { parseBody, type Handler, type Reply } from './request.ts';

export const LOSSES = ['cross_entropy', 'importance_sampling', 'ppo', 'cispo', 'dro'] as const;

export const healthz: Handler = async () => ({ json: { status: 'ok' } });

export const capabilities: Handler = async (state) => ({
  json: {
    supported_models: [{ model_name: state.opts.baseModel, max_context_length: state.opts.maxContextLength }],
    gsteer: {
      server: 'gsteer trainer serve',
      loss_fns: LOSSES,
      sampler: !!state.opts.sampler,
      extensions: ['datum.gsteer.constraint', 'forward_backward_input.gsteer', 'create_model.gsteer', 'get_info.gsteer_next_seq_id'],
    },
  },
});

export const clientConfig: Handler = async (state) => ({
  json: {
    pjwt_auth_enabled: false,
    credential_default_source: 'api_key',
    use_pyqwest_transport: false,
    proto_compress_fwdbwd: state.opts.compressForwardBackward ?? true,
    parallel_fwdbwd_chunks: true,
    create_model_via_load_weights: false,
    sample_no_retries: false,
  },
});

export const clientDynamicConfig: Handler = async () => ({ json: { refresh_interval_sec: 300 } });

export const createSession: Handler = async (state, req) => {
  parseBody(CreateSessionRequestSchema, req);
  return { json: { type: 'create_session', session_id: state.createSession().id, info_message: `gsteer trainer service: LoRA on ${state.opts.baseModel}` } };
};

export const sessionHeartbeat: Handler = async (state, req) => {
  state.session(parseBody(SessionHeartbeatRequestSchema, req).session_id);
  return { json: { type: 'session_heartbeat' } };
};

export const telemetry: Handler = async () => ({ json: { status: 'accepted' } });

function resultReply(r: FutureResult, acceptProto: boolean): Reply {
  switch (r.kind) {
    case 'json':
      return { json: r.body };
    case 'forward_backward':
      return acceptProto ? { proto: encodeForwardBackwardOutput(r.output) } : { json: outputToJson(r.output) };
    case 'sample':
      return acceptProto ? { proto: encodeSampleResponse(r.result) } : { json: sampleResultToJson(r.result) };
  }
}

export const retrieveFuture: Handler = async (state, req) => {
  const r = parseBody(FutureRetrieveRequestSchema, req);
  const s = await state.futures.wait(r.request_id, state.opts.retrieveHoldMs ?? 10_000);
  if (s === null)
    throw new ServiceError(404, `request_id ${r.request_id} is unknown to this server (it restarted, or the id is not one it gave); resend the request`);
  if (s === 'gone')
    throw new ServiceError(
      410,
      `request_id ${r.request_id}: its result was dropped (kept ${Math.round((state.opts.futureTtlMs ?? 900_000) / 1000)} s after it settled); resend the request`,
    );
  if (s.state === 'pending') return { json: { type: 'try_again', request_id: r.request_id, queue_state: 'active' } };
  if (s.state === 'failed') return { json: { error: s.error, category: s.category } };
  return resultReply(s.result, req.acceptProto);
};
