// SFT examples for the QREF refiner (method §13; paper: SFT on distilled (question, trace,
// batch -> rationale, refined batch) demonstrations): the train-split lines of
// qref.data.demonstrations, each as a generic chat example (rollout/qref/sft-example.ts:
// the refiner's prompt in, the canonical turn text out), written as JSONL. The teacher: the
// paper distils the targets from a stronger LLM; the embedded demo set's targets were written
// by hand to that format (data/qref/README.md), and a user's distilled set is the same format.
import { loadQref } from '../../data/qref/load.ts';
import type { RunConfig } from '../../configs/schema.ts';
import { writeFileAtomic } from '../../util/atomic.ts';
import { InputError } from '../../util/errors.ts';
import { demonstrationExample } from './sft-example.ts';

/** Writes the examples; returns a line for the log. */
export function writeQrefSftExamples(cfg: RunConfig, out: string): string {
  const d = cfg.qref.data;
  if (!d.demonstrations)
    throw new InputError('env is "qref" and SFT needs demonstrations: set qref.data.demonstrations (format in data/qref/README.md) or sft.examples');
  const data = loadQref({ corpus: d.corpus, questions: d.questions, demonstrations: d.demonstrations }, cfg.qref.turn);
  const train = data.demonstrations.filter((x) => x.split === 'train');
  if (!train.length) throw new InputError(`${d.demonstrations}: no demonstration has split "train"; SFT trains on the train split`);
  writeFileAtomic(out, train.map((x) => JSON.stringify(demonstrationExample(x, cfg.qref.turn))).join('\n') + '\n');
  return `wrote ${out}: ${train.length} QREF refiner demonstration(s) of the train split (${data.demonstrations.length - train.length} test ones left out)`;
}
