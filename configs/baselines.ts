// Config fragment for the released-checkpoint baselines of the paper's Tables 2, 4, 8 and
// Figure 3 (eval/external/; method §8.5), mounted as `eval.baselines` in configs/schema.ts.
// Each checkpoint is served behind an OpenAI-compatible endpoint (vLLM) and run in its own
// native format; its outputs are mapped to Ask / Stop (paper Table 7).
//   mistralInteract  Mistral-Interact (Qian et al. 2024, the released checkpoint hbx/Mistral-Interact),
//                    prompted as its release prompts it (a raw /v1/completions prompt), sampled as its
//                    release samples (temperature 0.2, top-p 0.95, repetition penalty 1.2)
//   cep              CEP's clarification consultant (Zhang et al. 2024, Llama-3-8B-Instruct with the
//                    released CEP checkpoint: its release serves it as "llama-3-8b-ask"), temperature 0,
//                    256 new tokens as its release; at Stop the dialogue is rewritten into q* by
//                    `cep.rewriter` (paper: Qwen3-8B; default the policy server's endpoint)
import { z } from 'zod';
import { chatFields, endpointSection } from './endpoint-section.ts';

const positiveInt = z.number().int().positive();

/** Each checkpoint's server: baseUrl is checked when the baseline is run (eval/external/). */
const served = { optionalUrl: true, apiKeyEnv: 'GSTEER_BASELINE_API_KEY', timeoutMs: 120_000, concurrency: 4 } as const;

export const ExternalBaselinesSchema = z
  .object({
    mistralInteract: endpointSection({
      ...served,
      model: 'mistral-interact', // the name the server gives the checkpoint
      fields: {
        temperature: z.number().min(0).max(2).default(0.2), // its release (test_one_new.py)
        topP: z.number().gt(0).max(1).default(0.95),
        repetitionPenalty: z.number().positive().default(1.2), // vLLM's repetition_penalty
        maxTokens: positiveInt.default(1024),
        /** Replies without [INQUIRY] or [SUMMARY] are sampled again (its release: 3 tries), then the turn is invalid. */
        parseAttempts: positiveInt.default(3),
      },
    }).prefault({}),
    cep: endpointSection({
      ...served,
      model: 'llama-3-8b-ask',
      fields: {
        temperature: z.number().min(0).max(2).default(0),
        maxTokens: positiveInt.default(256),
        rewriter: endpointSection({
          ...served,
          apiKeyEnv: 'GSTEER_POLICY_API_KEY',
          /** Absent baseUrl: policy.baseUrl (the paper's Qwen3-8B is the policy's base model). */
          model: 'Qwen/Qwen3-8B',
          fields: {
            temperature: z.number().min(0).max(2).default(0.7), // the Qwen baselines' test-time sampling
            topP: z.number().gt(0).max(1).default(1.0),
            maxTokens: positiveInt.default(1024),
            chatTemplateKwargs: chatFields.chatTemplateKwargs,
          },
        }).prefault({}),
      },
    }).prefault({}),
  })
  .strict();
export type ExternalBaselinesConfig = z.output<typeof ExternalBaselinesSchema>;
