// Wire datums -> the engine's records (trainer/engine/types.ts): Tinker's alignment is that
// position i of the model input predicts target_tokens[i], so every loss input is 1-D with one
// value per input token. Checked here, naming the datum, the input and the rule, so the engine
// sees only well-formed data. gsteer's per-datum extensions `constraint` and `scored` become
// EngineDatum.constraint (the engine checks it against its own grammar) and EngineDatum.scored.
import { InputError } from '../../util/errors.ts';
import type { EngineDatum } from '../engine/types.ts';
import type { WireDatum } from '../tinker/forward-backward.ts';

export function engineDatum(d: WireDatum, i: number, route: string): EngineDatum {
  const n = d.tokens.length;
  const at = `${route} data[${i}]`;
  if (n === 0) throw new InputError(`${at}: model_input has no tokens; send at least one`);
  if (!d.inputs.target_tokens)
    throw new InputError(`${at}: loss_fn_inputs has no target_tokens; every Tinker loss needs them ([N] int64, N = ${n} input tokens)`);
  const inputs: EngineDatum['inputs'] = { target_tokens: [] };
  for (const [name, t] of Object.entries(d.inputs)) {
    if (t.shape.length !== 1 || t.shape[0] !== n)
      throw new InputError(
        `${at}: loss_fn_inputs.${name} has shape ${JSON.stringify(t.shape)}; gsteer's engine takes 1-D inputs [N] with N = ${n} (one per model_input token: position i predicts target_tokens[i])`,
      );
    if (name === 'target_tokens' && t.dtype !== 'int64') throw new InputError(`${at}: loss_fn_inputs.target_tokens is ${t.dtype}; send int64 token ids`);
    inputs[name] = t.values;
  }
  const constraint = d.gsteer?.constraint as EngineDatum['constraint'] | undefined;
  if (constraint !== undefined && (typeof constraint !== 'object' || !Number.isInteger(constraint.start) || constraint.start < 0 || constraint.start >= n))
    throw new InputError(
      `${at}: gsteer.constraint.start = ${JSON.stringify((constraint as { start?: unknown })?.start)} must be an index into model_input [0, ${n})`,
    );
  const scored = d.gsteer?.scored;
  if (scored !== undefined && (!Array.isArray(scored) || scored.length !== n || !scored.every((x) => x === 0 || x === 1)))
    throw new InputError(`${at}: gsteer.scored must be [N] of 0 / 1 with N = ${n} (1 where the target logprob is wanted)`);
  return { tokens: d.tokens, inputs, ...(constraint ? { constraint } : {}), ...(scored ? { scored: scored as number[] } : {}) };
}
