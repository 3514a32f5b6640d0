// configs/paper.yaml is the paper's run: each line below quotes a setting of
// seeds/g-steer-paper.md (Table 6, "GRPO-Specific Settings", "User Simulator", "Rollout and
// Factor Extraction", "Settings") with the config path it maps to and the value the paper
// states; the test resolves paper.yaml (schema defaults included) and checks each one.
import { describe, expect, it } from 'vitest';
import { endpointOptions } from '../../configs/endpoints.ts';
import { loadConfig } from '../../configs/load.ts';
import type { RunConfig } from '../../configs/schema.ts';

const ALL_PROJECTIONS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

const PAPER: [line: string, path: string, value: unknown][] = [
  // Table 6
  ['Table 6: Initialization (SFT) Qwen/Qwen3-8B', 'policy.model', 'models/Qwen3-8B'],
  ['Table 6: Initialization (GRPO) final SFT checkpoint', 'sft.enabled', true],
  ['Table 6: Learning rate (SFT) 2e-4', 'sft.learningRate', 2e-4],
  ['Table 6: Learning rate (GRPO) 1e-6', 'grpo.learningRate', 1e-6],
  ['Table 6: AdamW, weight decay 0.0 (SFT)', 'sft.weightDecay', 0],
  ['Table 6: AdamW, weight decay 0.01 (GRPO)', 'grpo.weightDecay', 0.01],
  ['Table 6: Training length 2 epochs (SFT)', 'sft.epochs', 2],
  ['Table 6: 2 passes over 105 training instances (210 updates)', 'grpo.passes', 2],
  ['Table 6: ... one group per update (105 x 2 = 210 updates)', 'grpo.groupsPerUpdate', 1],
  ['Table 6: Batching 64 examples per update (SFT)', 'sft.batchSize', 64],
  ['Table 6: Batching 4 trajectories per training instance (GRPO)', 'rollout.groupSize', 4],
  ['Table 6: LoRA rank 8', 'lora.r', 8],
  ['Table 6: LoRA alpha 16', 'lora.alpha', 16],
  ['Table 6: LoRA dropout 0.05', 'lora.dropout', 0.05],
  ['Table 6: LoRA on attention and MLP projections', 'lora.targetModules', ALL_PROJECTIONS],
  ['Table 6: Random seed 42', 'seed', 42],
  // GRPO-Specific Settings
  ['GRPO: group size of four', 'rollout.groupSize', 4],
  ['GRPO: clipping parameter 0.2', 'grpo.epsilon', 0.2],
  ['GRPO: no KL penalty', 'grpo.betaKl', 0],
  ['GRPO: trajectory-level (each trajectory one unit of the loss, method §5.5)', 'grpo.lossAggregation', 'trajectory'],
  ['GRPO: rollouts use temperature 0.7', 'rollout.temperature', 0.7],
  ['GRPO: rollouts use top-p 0.95', 'rollout.topP', 0.95],
  ['GRPO: alpha_align = 1.0', 'reward.alpha', 1.0],
  ['GRPO: beta_fp = 0.3', 'reward.beta', 0.3],
  ['GRPO: lambda_ask = 0.04', 'reward.lambdaAsk', 0.04],
  ['GRPO: lambda_ret = 0.01', 'reward.lambdaRet', 0.01],
  ['GRPO: lambda_rep = 0.08', 'reward.lambdaRep', 0.08],
  ['GRPO: lambda_multi = 0.08', 'reward.lambdaMulti', 0.08],
  ['GRPO: invalid-output penalty 1.0', 'reward.invalidPenalty', 1.0],
  ['GRPO: non-stop penalty 0.2', 'reward.nonStopPenalty', 0.2],
  ['GRPO: repeated-question cosine threshold 0.86', 'reward.repetitionThreshold', 0.86],
  ['GRPO samples turns unconstrained (invalid turns penalized)', 'rollout.constrained', false],
  ['GRPO begins with empty memory and profile states', 'grpo.initialUserStates', undefined],
  ['Compute Environment: GRPO on one A100-SXM4-80GB (the plan must fit it, trainer/plan-config.ts)', 'trainer.device', 'A100-80GB'],
  // User Simulator
  ['User Simulator: Qwen3-32B', 'simulator.model', 'Qwen/Qwen3-32B'],
  ['User Simulator: an LLM, not the embedded stand-in', 'simulator.kind', 'llm'],
  ['User Simulator: temperature 0.7', 'simulator.temperature', 0.7],
  ['User Simulator: top-p 1.0', 'simulator.topP', 1.0],
  ['User Simulator: at most 768 new tokens', 'simulator.maxTokens', 768],
  // Rollout and Factor Extraction
  ['Test time: temperature 0.7', 'eval.temperature', 0.7],
  ['Test time: top-p 1.0', 'eval.topP', 1.0],
  ['Test time: at most 1024 new agent tokens', 'eval.maxTokens', 1024],
  ['Factor extraction: GPT-5.4 (an LLM)', 'eval.extractor.kind', 'llm'],
  ['Factor extraction: model identifier gpt-5.4-2026-03-05', 'eval.extractor.model', 'gpt-5.4-2026-03-05'],
  ['Factor extraction: structured format', 'eval.extractor.responseFormat', 'json_schema'],
  ['Each test instance evaluated once', 'eval.episodesPerInstance', 1],
  // Settings / Evaluation
  ['Settings: sentence-transformers/all-mpnet-base-v2 for semantic matching', 'encoder.model', 'sentence-transformers/all-mpnet-base-v2'],
  ['Settings: FAISS-based user-memory indexing (embedding pre-selection)', 'rollout.retrievePreselect', 'embedding'],
  ['Settings: a Qwen3-32B judge for memory and profile updates', 'judge.model', 'Qwen/Qwen3-32B'],
  ['Settings: the judge is an LLM', 'judge.kind', 'llm'],
  ['Evaluation: covered at cosine >= 0.55', 'eval.threshold', 0.55],
  ['method §2: Retrieve examines up to 15 candidates', 'rollout.retrieveCandidates', 15],
  ['method §2: Retrieve returns at most 3', 'rollout.retrieveTopK', 3],
  ['method §3: at most 12 turns', 'rollout.maxTurns', 12],
  ['method §5: on-policy (no lag)', 'grpo.maxPolicyLag', 0],
];

const at = (cfg: RunConfig, path: string): unknown => path.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], cfg);

describe('configs/paper.yaml is the paper run', () => {
  const cfg = loadConfig(['configs/paper.yaml']);
  it.each(PAPER)('%s -> %s', (_line, path, value) => {
    expect(at(cfg, path)).toEqual(value);
  });

  it('switches Qwen3 thinking off for the simulator and judge, and sends nothing to the OpenAI extractor', () => {
    expect(endpointOptions('simulator', cfg.simulator).chatTemplateKwargs).toEqual({ enable_thinking: false });
    expect(endpointOptions('judge', cfg.judge).chatTemplateKwargs).toEqual({ enable_thinking: false });
    expect(endpointOptions('extractor', cfg.eval.extractor).chatTemplateKwargs).toBeNull();
  });

  it('every line names a path that exists in the resolved config', () => {
    const known = (path: string) => {
      const parts = path.split('.');
      const parent = at(cfg, parts.slice(0, -1).join('.')) ?? cfg;
      return parts.length === 1 ? parts[0]! in cfg : typeof parent === 'object' && parent !== null;
    };
    for (const [line, path] of PAPER) expect(known(path), line).toBe(true);
    // optional keys the paper leaves unset are real schema keys (a typo would resolve to undefined too)
    expect(loadConfig(['configs/paper.yaml'], ['grpo.initialUserStates=x.jsonl']).grpo.initialUserStates).toBe('x.jsonl');
  });
});
