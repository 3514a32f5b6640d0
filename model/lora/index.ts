// Public API of LoRA adapters (PEFT semantics and layout).
export { PROJ_NAMES, PROJ_PARENT, type LoraAdapter, type LoraPair, type ProjName } from './types.ts';
export { buildAdapter, createLora } from './lora.ts';
export { mergeLora } from './merge.ts';
export { ADAPTER_CONFIG, ADAPTER_WEIGHTS, adapterFingerprint, loadPeftAdapter, peftTensorName, savePeftAdapter } from './peft.ts';
