// `gsteer model expand`: more decoder layers for a trained model without changing what it
// computes (block expansion, as in LLaMA Pro, Wu et al. 2024). The L layers are cut into
// `groups` equal runs; after the last layer of each run a copy of that layer is inserted
// whose two output projections (self_attn.o_proj, mlp.down_proj) are zero, so the new
// layer adds nothing to the residual stream:
//
//   h' = h + o_proj(attn(norm(h))) = h          (o_proj = 0)
//   h'' = h' + down_proj(mlp(norm(h'))) = h'    (down_proj = 0)
//
// The expanded model gives the same logits as the source (tests/model/expand.test.ts);
// further training (`gsteer model pretrain`) then uses the new layers: the gradients of the
// zero projections are not zero, and once they move, the copied q/k/v and MLP weights train too.
//
//   layers [0 .. L-1], groups G (L % G == 0):  [0 .. L/G-1, copy(L/G-1), L/G .. 2L/G-1, copy(2L/G-1), ...]
//
// config.json gets num_hidden_layers L + G; every other file of the source is copied except
// its model card and training records; expand.json records the source (folder, weights
// sha256, its pretrain.json / average.json) and the layer map.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sha256File, writeFileAtomic } from '../util/atomic.ts';
import { InputError } from '../util/errors.ts';
import type { SafeTensor } from './io/dtype.ts';
import { openSafetensors, writeSafetensors } from './io/safetensors.ts';
import { readQwen3Config, toHfConfig } from './config.ts';
import { copyModelFiles, EXPAND_RECORD, modelRecords, refuseNonEmptyOut, WEIGHTS_FILE } from './records.ts';

export { EXPAND_RECORD };
/** The projections written into the residual stream: zero in an inserted layer. */
const ZEROED = ['self_attn.o_proj.weight', 'mlp.down_proj.weight'];

/**
 * Where each layer of the expanded model comes from: `layerMap(4, 2)` = [0, 1, 1*, 2, 3, 3*]
 * as [{from: 0, copy: false}, {from: 1, copy: false}, {from: 1, copy: true}, ...].
 */
export function layerMap(layers: number, groups: number): { from: number; copy: boolean }[] {
  if (!Number.isInteger(groups) || groups < 1 || groups > layers || layers % groups !== 0)
    throw new InputError(
      `model expand: --groups ${groups} must be a whole number from 1 to ${layers} that divides the model's ${layers} layers (one new layer per group)`,
    );
  const size = layers / groups;
  const out: { from: number; copy: boolean }[] = [];
  for (let i = 0; i < layers; i++) {
    out.push({ from: i, copy: false });
    if ((i + 1) % size === 0) out.push({ from: i, copy: true });
  }
  return out;
}

const zerosLike = (t: SafeTensor): SafeTensor => ({ dtype: t.dtype, shape: [...t.shape], data: new Uint8Array(t.data.byteLength) });

/** Write the expanded copy of the model in `src` to `out` (a new or empty folder). */
export function expandModel(src: string, out: string, groups: number): { layers: number; map: { from: number; copy: boolean }[] } {
  refuseNonEmptyOut('model expand', out);
  const cfg = readQwen3Config(src);
  const map = layerMap(cfg.numHiddenLayers, groups);
  const file = openSafetensors(join(src, WEIGHTS_FILE));
  const tensors = new Map<string, SafeTensor>();
  try {
    const prefix = /^model\.layers\.(\d+)\.(.+)$/;
    for (const name of file.names) if (!prefix.test(name)) tensors.set(name, file.read(name));
    map.forEach(({ from, copy }, i) => {
      const own = file.names.filter((n) => n.startsWith(`model.layers.${from}.`));
      if (own.length === 0) throw new InputError(`${file.file}: no tensors of layer ${from} (config.json says ${cfg.numHiddenLayers} layers)`);
      for (const name of own) {
        const rest = name.slice(`model.layers.${from}.`.length);
        const t = file.read(name);
        if (copy && ZEROED.includes(rest)) tensors.set(`model.layers.${i}.${rest}`, zerosLike(t));
        else tensors.set(`model.layers.${i}.${rest}`, t);
      }
    });
  } finally {
    file.close();
  }
  copyModelFiles(src, out, ['config.json']); // config.json is rewritten below
  const raw = JSON.parse(readFileSync(join(src, 'config.json'), 'utf8')) as Record<string, unknown>;
  const layers = map.length;
  writeFileAtomic(join(out, 'config.json'), `${JSON.stringify({ ...raw, ...toHfConfig({ ...cfg, numHiddenLayers: layers }) }, null, 2)}\n`);
  writeSafetensors(join(out, WEIGHTS_FILE), tensors, { format: 'pt' });
  const source = { dir: src, sha256: sha256File(join(src, WEIGHTS_FILE)), ...modelRecords(src) };
  writeFileAtomic(
    join(out, EXPAND_RECORD),
    `${JSON.stringify({ format: 'gsteer-expand/1', groups, layers: map.map((m) => (m.copy ? `${m.from} (copy, zero o_proj and down_proj)` : `${m.from}`)), source }, null, 2)}\n`,
  );
  return { layers, map };
}
