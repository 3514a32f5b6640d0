// `gsteer embed`: print the sentence-encoder vectors (method §9) of the given texts, to
// check an encoder setup (embedded, ONNX folder, or HTTP endpoint) from the shell.
import { parseArgs } from 'node:util';
import { loadConfig } from '../../configs/load.ts';
import { cosine } from '../../core/encoder.ts';
import { createEncoder } from '../../encoders/index.ts';
import { InputError } from '../../util/errors.ts';

export const summary = 'print sentence-encoder embeddings of texts as JSON (checks the encoder config)';
export const usage = `usage: gsteer embed [--config FILE ...] [--set key=value ...] [--cosine] TEXT...

Embeds each TEXT with the configured encoder (encoder.kind = embedded | onnx | http) and
prints {"encoder", "dim", "vectors": [[...], ...]} as JSON. With --cosine it prints the
pairwise cosine matrix instead of the vectors.
  e.g. gsteer embed --set encoder.kind=http --set encoder.baseUrl=http://127.0.0.1:8080/v1 "hotel budget"`;

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string', multiple: true },
      set: { type: 'string', multiple: true },
      cosine: { type: 'boolean', default: false },
    },
  });
  if (positionals.length === 0) throw new InputError(`give at least one TEXT to embed\n\n${usage}`);
  const cfg = loadConfig(values.config ?? [], values.set ?? []);
  const enc = createEncoder(cfg.encoder);
  const vecs = await enc.embed(positionals);
  const body = values.cosine
    ? { encoder: enc.name, dim: enc.dim, texts: positionals, cosine: vecs.map((a) => vecs.map((b) => Number(cosine(a, b).toFixed(6)))) }
    : { encoder: enc.name, dim: enc.dim, vectors: vecs.map((v) => Array.from(v)) };
  process.stdout.write(`${JSON.stringify(body)}\n`);
  return 0;
}
