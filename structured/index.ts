// Structured outputs for gsteer serve and the trainer: compile a spec once per process,
// constrain one sequence, replay a recorded completion. See serve/README.md ("Structured
// outputs") for the wire format and structured/turn/grammar.ts for the policy grammar.
export { compileConstraint, ConstraintError, type CompiledConstraint } from './compile.ts';
export { allowedIds, maskHas, TokenConstraint, type ConstraintOptions } from './constraint.ts';
export { POLICY_FILTER_VERSION, PolicyTurnFilter } from './policy-filter.ts';
export { POLICY_CAPS, policyMinTokens } from './turn/caps.ts';
export { replayConstraint, type ReplayResult } from './replay.ts';
export { specHash, TOKEN_FILTERS, type ConstraintSpec, type PolicyGrammar, type TokenFilterKind } from './constraint-spec.ts';
export { choiceEbnf } from './regex-ebnf.ts';
export { qwen3Vocab, QWEN3_VOCAB_SIZE, type TokenVocab } from './vocab.ts';
