// The endpoints layer's public API (README.md describes it).
export { createEndpoint, type Endpoint, type EndpointDeps } from './endpoint.ts';
export { withRequestCache, requestKey } from './cache.ts';
export { isQwen3Model, defaultChatTemplateKwargs } from './qwen3.ts';
export { isOpenAiReasoningModel, modelFamily, type ModelFamily } from './model-family.ts';
export { openaiClient, endpointUrl, maskUrl } from './client.ts';
export {
  boundedFetch,
  ConnectionLost,
  DeadlineExceeded,
  DEFAULT_MAX_RESPONSE_MB,
  fetchFailure,
  mib,
  ResponseTooLarge,
  type FetchBounds,
} from './bounded-fetch.ts';
export { BadReply, ReplyError, type ReplyErrorKind } from './errors.ts';
export type { AttemptOutcome } from './call-loop.ts';
export { type CallRecord, type CallSink, type CallStatus, nullSink, teeSinks } from './records.ts';
export { JsonlCallSink } from './jsonl-sink.ts';
export { CallAggregator, summarizeCalls, percentileNearestRank } from './metrics.ts';
export { type JsonSpec, jsonSchemaOf } from './request-body.ts';
export { DEFAULT_RETRY_TIMING, backoffMs, parseRetryAfter, classifyFailure, type Failure } from './retry-rule.ts';
export type { ChatMessage, ChatReply, ChatRequest, EmbedReply, EndpointOptions, JsonReply, ResponseFormatMode, RetryTiming, Usage } from './types.ts';
export { runCallSink, withCallEpisode, withCallGroup, type RunCallRecord } from './call-group.ts';
