// `gsteer model average`: the weighted mean of the weights of models that share one
// architecture and vocabulary (checkpoint averaging; a "model soup" of fine-tunes of one
// base, Wortsman et al. 2022). Models trained on from one checkpoint tend to stay in one basin
// of the loss, so their mean is a model too, and often one that generalizes better than
// either (the demo base: docs/history/demo-base.md, "Extra data and weight averaging").
//
//   theta_out[name] = sum_k w_k * theta_k[name]   for every tensor name,  sum_k w_k = 1
//
// Tensors are read one name at a time from every file, averaged in float64 and written in
// the first model's dtype. The other files of the first model (config.json,
// generation_config.json, vocab_map.json, tokenizer files) are copied; its model card and
// training record are not (they describe that model, not the mean): average.json records
// the sources, their weights and the sha256 of each source's weights, with each source's
// own records (pretrain.json, average.json, expand.json: records.ts) when it has them.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { sha256File, writeFileAtomic } from '../util/atomic.ts';
import { InputError } from '../util/errors.ts';
import { fromFloat32, numel, toFloat32, type SafeTensor } from './io/dtype.ts';
import { openSafetensors, writeSafetensors, type SafetensorsFile } from './io/safetensors.ts';
import { readQwen3Config, toHfConfig } from './config.ts';
import { AVERAGE_RECORD, copyModelFiles, modelRecords, refuseNonEmptyOut, WEIGHTS_FILE, type ModelRecords } from './records.ts';
import { readVocabMap, VOCAB_MAP_FILE } from './vocab-map.ts';

export { AVERAGE_RECORD };
export interface AverageSource extends ModelRecords {
  dir: string;
  weight: number;
  sha256: string;
}

/** The parsed config.json (config.ts) in its Hugging Face field names, for comparing and naming fields. */
function hfConfig(dir: string): Record<string, unknown> {
  if (!existsSync(join(dir, 'config.json')))
    throw new InputError(`${dir}/config.json: not found; each model to average is a folder with config.json and ${WEIGHTS_FILE}`);
  return toHfConfig(readQwen3Config(dir));
}

/** The same architecture and vocabulary map as the first model, or an InputError naming the difference. */
function checkSameShape(dirs: readonly string[]): void {
  const first = hfConfig(dirs[0]!);
  const vocab = (d: string) => {
    const m = readVocabMap(d, first.vocab_size as number);
    return m && JSON.stringify([Array.from(m.keptIds), m.unkId]);
  };
  const firstVocab = vocab(dirs[0]!);
  for (const dir of dirs.slice(1)) {
    const cfg = hfConfig(dir);
    for (const k of Object.keys(first))
      if (JSON.stringify(cfg[k]) !== JSON.stringify(first[k]))
        throw new InputError(
          `${dir}/config.json: ${k} ${JSON.stringify(cfg[k])} differs from ${dirs[0]}/config.json (${JSON.stringify(first[k])}); only models of one architecture can be averaged`,
        );
    if (vocab(dir) !== firstVocab)
      throw new InputError(
        `${dir}/${VOCAB_MAP_FILE} differs from ${dirs[0]}'s (or only one has it); averaged models must share one trimmed vocabulary (rows would mean different tokens)`,
      );
  }
}

/** Normalized weights: `raw` (positive, one per model) or uniform. */
export function averageWeights(n: number, raw?: readonly number[]): number[] {
  if (n < 2) throw new InputError(`model average: ${n} model(s) given; average at least 2`);
  const w = raw ?? Array.from({ length: n }, () => 1);
  if (w.length !== n) throw new InputError(`model average: --weights has ${w.length} value(s) for ${n} models; give one weight per model`);
  w.forEach((x, i) => {
    if (!(Number.isFinite(x) && x > 0)) throw new InputError(`model average: weight ${i + 1} is ${x}; weights must be positive numbers`);
  });
  const sum = w.reduce((a, b) => a + b, 0);
  return w.map((x) => x / sum);
}

/** sum_k w[k] * x_k for one tensor name (float64 accumulation), in `like`'s dtype. [shape] each -> [shape] */
export function weightedMean(parts: readonly SafeTensor[], w: readonly number[], name: string): SafeTensor {
  const like = parts[0]!;
  if (like.dtype !== 'F32' && like.dtype !== 'F16' && like.dtype !== 'BF16')
    throw new InputError(`tensor "${name}" has dtype ${like.dtype}; only floating-point weights (F32, F16, BF16) can be averaged`);
  const acc = new Float64Array(numel(like.shape));
  parts.forEach((t, k) => {
    const x = toFloat32(t, name);
    for (let i = 0; i < acc.length; i++) acc[i]! += w[k]! * x[i]!;
  });
  return fromFloat32(Float32Array.from(acc), [...like.shape], like.dtype);
}

/** Write the weighted mean of the models in `dirs` to `out`, a new folder (or an empty one). */
export function averageModels(dirs: readonly string[], out: string, rawWeights?: readonly number[]): AverageSource[] {
  const w = averageWeights(dirs.length, rawWeights);
  refuseNonEmptyOut('model average', out);
  checkSameShape(dirs);
  const sources: AverageSource[] = dirs.map((dir, k) => ({ dir, weight: w[k]!, sha256: sha256File(join(dir, WEIGHTS_FILE)), ...modelRecords(dir) }));
  const files: SafetensorsFile[] = [];
  const tensors = new Map<string, SafeTensor>();
  try {
    for (const d of dirs) files.push(openSafetensors(join(d, WEIGHTS_FILE)));
    const names = files[0]!.names;
    for (const f of files.slice(1)) {
      const extra = f.names.filter((n) => !names.includes(n));
      const missing = names.filter((n) => !f.names.includes(n));
      if (extra.length || missing.length)
        throw new InputError(
          `${f.file}: tensor names differ from ${files[0]!.file} (missing ${JSON.stringify(missing.slice(0, 3))}, extra ${JSON.stringify(extra.slice(0, 3))}); only models of one architecture can be averaged`,
        );
    }
    for (const name of names) {
      const parts = files.map((f) => f.read(name));
      parts.forEach((p, k) => {
        if (p.dtype !== parts[0]!.dtype || p.shape.join() !== parts[0]!.shape.join())
          throw new InputError(
            `${files[k]!.file}: tensor "${name}" is ${p.dtype}[${p.shape}], ${files[0]!.file} has ${parts[0]!.dtype}[${parts[0]!.shape}]; they must match to be averaged`,
          );
      });
      tensors.set(name, weightedMean(parts, w, name));
    }
  } finally {
    for (const f of files) f.close();
  }
  copyModelFiles(dirs[0]!, out);
  writeSafetensors(join(out, WEIGHTS_FILE), tensors, { format: 'pt' });
  writeFileAtomic(join(out, AVERAGE_RECORD), `${JSON.stringify({ format: 'gsteer-average/1', sources }, null, 2)}\n`);
  return sources;
}
