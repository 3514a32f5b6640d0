// gsteer's Tinker client (README.md "The client").
export { TinkerClient, type TinkerClientOptions, type SampleOptions } from './client.ts';
export { TrainingModel, wireDatum, type CallOptions } from './training-model.ts';
export { ModelLostError, TinkerHttp } from './http.ts';
export { RequestFailedError, awaitFuture } from './futures.ts';
export {
  JsonlTrainerCallSink,
  TrainerCallAggregator,
  summarizeTrainerCalls,
  teeTrainerSinks,
  nullTrainerSink,
  type TrainerCallRecord,
  type TrainerCallSink,
} from './records.ts';
