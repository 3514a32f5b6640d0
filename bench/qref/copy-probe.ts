// Does a QREF base copy names from its prompt? (models/tiny-qref/README.md, method §13.6)
// Teacher-forced on the refiner's SFT examples: for every copied word of a target query (a
// name or number the query takes from the question or the trace, trainer/pretrain/augment-qref.ts),
// the log-probability of its first token, on the demonstrations as they are and on `--draws`
// copies of each with fresh names (the copy augmentation, seeded). Beside it, two references
// worked from the same examples: guessing uniformly over the augmentation's name pool, and
// picking uniformly among the distinct name words of the example's own prompt (what a model that
// copies *some* prompt name would score). A base that copies scores near 0 on fresh names.
// With --drills N, also on N fresh copy drills (trainer/pretrain/copy-drill.ts, drawn from the
// same pool under the probe's seed, never the training's stream): every name word of the drill's
// queries, the first query's apart from the later ones (copying those needs induction);
// --drill-shape prompt puts them in the examples' prompts (copy-drill.ts DrillShape).
//
//   node --import tsx bench/qref/copy-probe.ts [--model models/tiny-qref] [--examples F] [--draws 3] [--seed 99] [--drills 0] [--drill-shape plain|prompt]
//
// --examples: the refiner's SFT examples (default: written here from configs/qref-demo.yaml, as the
// demo's sft-data phase does). Not part of `npm test`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as tf from '@tensorflow/tfjs';
import { loadConfig } from '../../configs/load.ts';
import { qwen3Tokenizer } from '../../core/tokenizer.ts';
import { selectBackend, type BackendKind } from '../../model/backend.ts';
import { loadModel, tokenLogprobs } from '../../model/index.ts';
import { writeQrefSftExamples } from '../../rollout/qref/sft-examples.ts';
import { QUERIES_HEADER } from '../../structured/qref/turn.ts';
import { augmentRefinerExample, copiedWords, refinerNameWords, WORD } from '../../trainer/pretrain/augment-qref.ts';
import { copyDrill, drillContext } from '../../trainer/pretrain/copy-drill.ts';
import { toSequence } from '../../trainer/pretrain/data.ts';
import type { TrainableExample } from '../../trainer/sft/tokens.ts';
import { readTrainableExamples } from '../../trainer/sft/tokens.ts';
import { Rng } from '../../util/rng.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: 'models/tiny-qref' },
    examples: { type: 'string' },
    draws: { type: 'string', default: '3' },
    seed: { type: 'string', default: '99' },
    drills: { type: 'string', default: '0' },
    'drill-shape': { type: 'string', default: 'plain' },
    backend: { type: 'string', default: 'wasm' },
  },
});

type Kind = 'own' | 'fresh' | 'drill-first' | 'drill-later';
const KIND_LABEL: Record<Kind, string> = {
  own: "the demonstrations' own",
  fresh: 'fresh (augmented)',
  'drill-first': "fresh drills, the first query's words",
  'drill-later': "fresh drills, the later queries' words",
};

interface Mark {
  seq: number;
  pos: number;
  kind: Kind;
  /** ln(1 / distinct name words of the example's prompt) */
  promptGuess: number;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

async function main(): Promise<void> {
  await selectBackend(values.backend as BackendKind, () => {});
  const tmp = mkdtempSync(join(tmpdir(), 'gsteer-copy-probe-'));
  try {
    let file = values.examples;
    if (!file) writeQrefSftExamples(loadConfig(['configs/qref-demo.yaml']), (file = join(tmp, 'examples.jsonl')));
    const examples = readTrainableExamples(file);
    const pool = refinerNameWords(examples);
    const tok = qwen3Tokenizer();
    const seqs: number[][] = [];
    const marks: Mark[] = [];
    // every copied word of a's target queries: `kind` of each (by its query line), the prompt's name count
    const mark = (a: TrainableExample, i: number, words: readonly string[], kind: (line: number) => Kind) => {
      const s = toSequence(tok, a, i, { context: null, maxLen: 4096 });
      if (!s) return;
      const promptNames = new Set(refinerNameWords([a]));
      // character offset of each target token (target text = decode of ids[start..])
      const target = s.ids.slice(s.start);
      const starts: number[] = [];
      let at = 0;
      for (const id of target) starts.push(at), (at += tok.decode([id]).length);
      const text = tok.decode(target);
      const qAt = text.indexOf(QUERIES_HEADER);
      const seq = seqs.push(s.ids) - 1;
      for (const m of text.matchAll(WORD)) {
        if (m.index < qAt || !words.includes(m[0])) continue;
        const t = starts.findLastIndex((c) => c <= m.index); // the token the word starts in
        if (t < 0) continue;
        const line = text.slice(qAt, m.index).split('\n').length - 2; // 0 = the first query
        marks.push({ seq, pos: s.start + t, kind: kind(line), promptGuess: -Math.log(Math.max(1, promptNames.size)) });
      }
    };
    for (let d = 0; d <= Number(values.draws); d++)
      examples.forEach((ex, i) => {
        const a = d === 0 ? ex : augmentRefinerExample(ex, pool, Rng.derive(Number(values.seed), 'copy-probe', d, i));
        if (a) mark(a, i, copiedWords(a), () => (d > 0 ? 'fresh' : 'own'));
      });
    for (let i = 0; i < Number(values.drills); i++) {
      const context = values['drill-shape'] === 'prompt' ? drillContext(examples[i % examples.length]!) : undefined;
      const a = copyDrill(pool, Rng.derive(Number(values.seed), 'copy-probe-drill', i), context);
      mark(a, i, pool, (line) => (line === 0 ? 'drill-first' : 'drill-later'));
    }
    const model = await loadModel(values.model!);
    const lp: number[][] = [];
    for (let i = 0; i < seqs.length; i += 8) {
      const { logprobs } = tokenLogprobs(model, null, { inputIds: seqs.slice(i, i + 8) });
      lp.push(...(logprobs.arraySync() as number[][]));
      logprobs.dispose();
    }
    const uniform = -Math.log(new Set(pool).size);
    console.log(
      `copy probe: ${values.model}, ${examples.length} examples, ${values.draws} fresh-name draws each, ${values.drills} ${values['drill-shape']} drills (seed ${values.seed}), backend ${tf.getBackend()}`,
    );
    console.log('');
    console.log(
      "| names | copied words | mean log p(first token) | share with p > 0.5 | uniform over the pool (%d words) | uniform over the prompt's names |".replace(
        '%d',
        String(new Set(pool).size),
      ),
    );
    console.log('|---|---|---|---|---|---|');
    for (const kind of Object.keys(KIND_LABEL) as Kind[]) {
      const ms = marks.filter((m) => m.kind === kind);
      if (!ms.length) continue;
      const xs = ms.map((m) => lp[m.seq]![m.pos]!);
      console.log(
        `| ${KIND_LABEL[kind]} | ${xs.length} | ${mean(xs).toFixed(2)} | ${(xs.filter((x) => x > Math.log(0.5)).length / Math.max(1, xs.length)).toFixed(3)} | ${uniform.toFixed(2)} | ${mean(ms.map((m) => m.promptGuess)).toFixed(2)} |`,
      );
    }
    model.dispose();
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
