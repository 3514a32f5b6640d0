// Public API of the tfjs Qwen3 model (other parts code against these names).
export type { Qwen3Config } from './config.ts';
export { parseQwen3Config, readQwen3Config, toHfConfig } from './config.ts';
export type { Qwen3Model } from './model.ts';
export { loadModel, makeModel } from './model.ts';
export { tokenLogprobs, type LogprobOptions, type LogprobResult } from './logprobs.ts';
export { createKvCache, forwardStep, type KvCache } from './kv-cache.ts';
export type { VocabMap } from './vocab-map.ts';
export { VOCAB_MAP_FILE, buildVocabMap, idsToRows, readVocabMap } from './vocab-map.ts';
export type { LoraAdapter } from './lora/types.ts';
