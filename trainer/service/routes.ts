// The Tinker API routes gsteer's trainer service answers (the 0.25 SDK's resources/*.py and
// rest_client.py paths), as path -> method -> handler.
import type { Handler } from './request.ts';
import * as sampling from './routes-sampling.ts';
import * as service from './routes-service.ts';
import * as training from './routes-training.ts';
import * as weights from './routes-weights.ts';

export const ROUTES: Record<string, Partial<Record<'GET' | 'POST', Handler>>> = {
  '/api/v1/healthz': { GET: service.healthz },
  '/api/v1/get_server_capabilities': { GET: service.capabilities },
  '/api/v1/client/config': { POST: service.clientConfig },
  '/api/v1/client/dynamic_config': { POST: service.clientDynamicConfig },
  '/api/v1/create_session': { POST: service.createSession },
  '/api/v1/session_heartbeat': { POST: service.sessionHeartbeat },
  '/api/v1/telemetry': { POST: service.telemetry },
  '/api/v1/retrieve_future': { POST: service.retrieveFuture },
  '/api/v1/create_model': { POST: training.createModel },
  '/api/v1/get_info': { POST: training.getInfo },
  '/api/v1/unload_model': { POST: training.unloadModel },
  '/api/v1/forward_backward': { POST: training.forwardBackward },
  '/api/v1/forward': { POST: training.forward },
  '/api/v1/optim_step': { POST: training.optimStep },
  '/api/v1/save_weights': { POST: weights.saveWeights },
  '/api/v1/save_weights_for_sampler': { POST: weights.saveWeightsForSampler },
  '/api/v1/load_weights': { POST: weights.loadWeights },
  '/api/v1/weights_info': { POST: weights.weightsInfo },
  '/api/v1/create_sampling_session': { POST: sampling.createSamplingSession },
  '/api/v1/asample': { POST: sampling.asample },
  '/api/v1/samplers/{id}': { GET: sampling.getSampler },
};
