// The safetensors files of a Hugging Face model folder: a sharded checkpoint
// (`model.safetensors.index.json` with a `weight_map` name -> shard file), a single
// `model.safetensors`, or any `*.safetensors` files in the folder.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../../util/errors.ts';
import type { SafeTensor } from './dtype.ts';
import { openSafetensors, type SafetensorsFile } from './safetensors.ts';

export const INDEX_FILE = 'model.safetensors.index.json';

/** Tensor name -> shard file (absolute). */
export function listWeightFiles(dir: string): Map<string, string> {
  const index = join(dir, INDEX_FILE);
  const out = new Map<string, string>();
  if (existsSync(index)) {
    let parsed: { weight_map?: unknown };
    try {
      parsed = JSON.parse(readFileSync(index, 'utf8')) as { weight_map?: unknown };
    } catch (e) {
      throw new InputError(`${index}: not valid JSON (${(e as Error).message})`);
    }
    const map = parsed.weight_map;
    if (typeof map !== 'object' || map === null) throw new InputError(`${index}: missing "weight_map" (tensor name -> shard file)`);
    for (const [name, shard] of Object.entries(map)) {
      if (typeof shard !== 'string' || shard.includes('/') || shard.includes('\\'))
        throw new InputError(`${index}: weight_map["${name}"] = ${JSON.stringify(shard)} must be a file name in the same folder`);
      out.set(name, join(dir, shard));
    }
    return out;
  }
  const files = existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith('.safetensors'))
        .sort()
    : [];
  if (!files.length) throw new InputError(`${dir}: no model.safetensors, ${INDEX_FILE} or *.safetensors file; point --model at a Hugging Face model folder`);
  for (const f of files) {
    const st = openSafetensors(join(dir, f));
    for (const name of st.names) out.set(name, join(dir, f));
    st.close();
  }
  return out;
}

/** Opens each shard once and reads tensors by name; `close()` when done. */
export class CheckpointReader {
  private readonly open = new Map<string, SafetensorsFile>();
  readonly files: Map<string, string>;

  constructor(readonly dir: string) {
    this.files = listWeightFiles(dir);
  }

  has(name: string): boolean {
    return this.files.has(name);
  }

  read(name: string): SafeTensor {
    const file = this.files.get(name);
    if (!file) throw new InputError(`${this.dir}: checkpoint has no tensor "${name}"`);
    let st = this.open.get(file);
    if (!st) {
      st = openSafetensors(file);
      this.open.set(file, st);
    }
    if (!st.names.includes(name)) throw new InputError(`${file}: the index names tensor "${name}" in this shard but the shard does not contain it`);
    return st.read(name);
  }

  close(): void {
    for (const st of this.open.values()) st.close();
    this.open.clear();
  }
}
