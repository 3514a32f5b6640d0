// The released-checkpoint baselines (method §8.5; eval/external/): Mistral-Interact and
// CEP-Clarify+Rewrite, each against a local HTTP server that speaks like the released model
// behind vLLM: Mistral-Interact a raw /v1/completions prompt in its release's format answered with
// [INQUIRY] / [SUMMARY] tags; CEP's consultant a chat model answering yes/no and then a question;
// the rewriter a Qwen3 chat model. Checked: the native prompts as their releases build them, the
// mapping to Ask / Stop, q* from the summary or the rewrite, the shared simulator, and the rows in
// `gsteer eval compare`'s Table 2 and Figure 3. Dataset: tests/eval/fixture.ts (the embedded
// simulator answers "What about <target>?" with "Yes: <target>.").
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { run } from '../../cli/commands/eval.ts';
import type { Trajectory } from '../../core/types.ts';
import { cepConversation, needsClarification } from '../../eval/external/cep.ts';
import { MISTRAL_INTERACT_SYSTEM, parseMistralInteract } from '../../eval/external/mistral-interact.ts';
import type { EvalReport } from '../../eval/report.ts';
import { removeDatasets, writeDataset } from './fixture.ts';

interface Req {
  path: string;
  body: Record<string, unknown>;
}
const requests: Req[] = [];
let server: Server;
let baseUrl = '';

const FIRST =
  "[INITIAL THOUGHT] The task is vague: the user's budget is missing.\n- Budget: under 1000, under 1500\n[INQUIRY THOUGHT] Ask about the budget first.\n[INQUIRY] What about under 1200 EUR? Options: yes, no.";
const SUMMARY = '[SUMMARY THOUGHT] The user gave one constraint.\n- Budget under 1200 EUR.\n[SUMMARY] The user wants a laptop under 1200 EUR.';

/** Mistral-Interact: ask once, then summarize; never summarizes for "Which laptop is best for me?"; once a reply without tags for the flat. */
let flatTagless = true; // the first reply for the flat has no tags
function mistral(body: Record<string, unknown>): string {
  const prompt = String(body.prompt);
  const task = /Here is the task:\n(.*)\nAgent: /.exec(prompt)?.[1] ?? '';
  const answers = prompt.split('\nUser: ').length - 1;
  if (task === 'Which laptop is best for me?') return FIRST;
  if (task === 'Where should I rent a flat?' && flatTagless) {
    flatTagless = false;
    return 'I would like to help you find a flat.';
  }
  if (task === 'Where should I rent a flat?')
    return answers === 0
      ? '[INQUIRY THOUGHT] Noise matters.\n[INQUIRY] What about with a quiet neighbourhood?'
      : '[SUMMARY] Find a flat, with a quiet neighbourhood.';
  return answers === 0 ? FIRST : SUMMARY;
}

/** CEP's consultant (llama-3-8b-ask): clarification needed until one question was asked; the question; the rewriter (Qwen3). */
function chat(body: Record<string, unknown>): string {
  const messages = body.messages as { role: string; content: string }[];
  if (body.model === 'Qwen/Qwen3-8B') {
    const user = messages[1]!.content;
    const answers = [...user.matchAll(/^User: (.*)$/gm)].map((m) => m[1]!.replace(/^Yes: /, '').replace(/\.$/, ''));
    const query = /Original request: (.*)/.exec(user)![1]!.replace(/[?.]$/, '');
    return answers.length ? `${query}, ${answers.join(', ')}.` : `${query}.`;
  }
  const last = messages.at(-1)!.content;
  if (last.endsWith('Question:'))
    return /Where should I rent a flat/.test(messages[1]!.content) ? 'What about with a quiet neighbourhood?' : 'What about under 1200 EUR?';
  return last.includes("{'assistant':") ? 'No. The request is clear now.' : 'Yes, the user did not say what matters to them.';
}

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const body = JSON.parse(raw) as Record<string, unknown>;
      requests.push({ path: req.url ?? '', body });
      const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
      res.writeHead(200, { 'content-type': 'application/json' });
      if (req.url?.endsWith('/completions') && !req.url.includes('chat')) {
        res.end(
          JSON.stringify({
            id: 'c',
            object: 'text_completion',
            created: 0,
            model: body.model,
            choices: [{ index: 0, text: mistral(body), finish_reason: 'stop' }],
            usage,
          }),
        );
      } else {
        res.end(
          JSON.stringify({
            id: 'c',
            object: 'chat.completion',
            created: 0,
            model: body.model,
            choices: [{ index: 0, message: { role: 'assistant', content: chat(body) }, finish_reason: 'stop' }],
            usage,
          }),
        );
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
  removeDatasets();
});

async function quiet<T>(f: () => Promise<T>): Promise<T> {
  const spies = [
    vi.spyOn(console, 'log').mockImplementation(() => {}),
    vi.spyOn(console, 'error').mockImplementation(() => {}),
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true),
  ];
  try {
    return await f();
  } finally {
    for (const s of spies) s.mockRestore();
  }
}
const trajs = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Trajectory);

describe('native formats', () => {
  it("map as their releases parse them: Mistral-Interact's tags, CEP's first yes/no, the Python list of the conversation", () => {
    expect(parseMistralInteract(FIRST)).toMatchObject({
      action: 'ASK',
      execute: 'What about under 1200 EUR? Options: yes, no.',
      thought: 'Ask about the budget first.',
    });
    expect(parseMistralInteract(SUMMARY)).toMatchObject({ action: 'STOP', execute: 'The user wants a laptop under 1200 EUR.' });
    expect(parseMistralInteract('[INITIAL THOUGHT] clear task')).toBeNull();
    expect([needsClarification('Yes.'), needsClarification('No, yes'), needsClarification('It is clear.')]).toEqual([true, false, false]);
    expect(cepConversation('Rent a flat?', [{ question: "What's your budget?", answer: 'Under 900.', raw: '' }])).toBe(
      `[{'user': 'Rent a flat?'}, {'assistant': "What's your budget?"}, {'user': 'Under 900.'}]`,
    );
  });
});

describe('gsteer eval --baseline mistral_interact | cep_rewrite', () => {
  let ds: ReturnType<typeof writeDataset>;
  beforeAll(() => {
    ds = writeDataset(
      `rollout:\n  maxTurns: 3\neval:\n  concurrency: 1\n  bootstrap: {samples: 20}\n  baselines:\n    mistralInteract: {baseUrl: ${baseUrl}, maxRetries: 0}\n    cep: {baseUrl: ${baseUrl}, maxRetries: 0, rewriter: {baseUrl: ${baseUrl}, maxRetries: 0}}\n`,
    );
  });

  it('Mistral-Interact: its prompt, its sampling; [INQUIRY] asks the simulator, [SUMMARY] is q*; a tagless reply is sampled again', async () => {
    const out = join(ds.dir, 'mistral.json');
    expect(await quiet(() => run(['--config', ds.config, '--baseline', 'mistral_interact', '--out', out]))).toBe(0);
    const t = trajs(join(ds.dir, 'mistral.trajectories.jsonl'));
    expect(t.map((x) => [x.instanceId, x.termination, x.askCount, x.refinedQuery])).toEqual([
      ['seen-1', 'stop', 1, 'The user wants a laptop under 1200 EUR.'],
      ['uu-1', 'max_turns', 3, null], // it never summarized within 3 turns
      ['ut-1', 'stop', 1, 'Find a flat, with a quiet neighbourhood.'],
    ]);
    expect(t[0]!.turns[0]!.observation).toMatchObject({
      kind: 'answer',
      question: 'What about under 1200 EUR? Options: yes, no.',
      answer: 'Yes: under 1200 EUR.',
      targetId: 'a',
    });
    const calls = requests.filter((r) => r.path.endsWith('/completions') && !r.path.includes('chat'));
    // seen-1 turn 2: the release's prompt with its own first reply and the simulator's answer
    expect(calls[1]!.body.prompt).toBe(
      `<s>User: ${MISTRAL_INTERACT_SYSTEM}\n\nHere is the task:\nWhich laptop should I buy?\nAgent: ${FIRST}\nUser: Yes: under 1200 EUR.\nAgent: `,
    );
    expect(calls[1]!.body).toMatchObject({ model: 'mistral-interact', temperature: 0.2, top_p: 0.95, repetition_penalty: 1.2, max_tokens: 1024 });
    expect(calls.length).toBe(2 + 3 + 3); // seen-1 2; uu-1 3; ut-1: a tagless reply, its resample, then the summary
    const report = JSON.parse(readFileSync(out, 'utf8')) as EvalReport;
    expect(report.method).toEqual({ baseline: 'mistral_interact', label: 'Mistral-Interact', model: 'mistral-interact', source: 'episodes' });
    expect(report.results[0]!.overall).toMatchObject({ episodes: 3, stopped: 2 });
  });

  it('CEP-Clarify+Rewrite: the consultant decides and asks; at "No" the Qwen3-8B rewriter writes q* from the dialogue', async () => {
    const before = requests.length;
    const out = join(ds.dir, 'cep.json');
    expect(await quiet(() => run(['--config', ds.config, '--baseline', 'cep_rewrite', '--out', out]))).toBe(0);
    const t = trajs(join(ds.dir, 'cep.trajectories.jsonl'));
    expect(t.map((x) => [x.instanceId, x.termination, x.askCount, x.refinedQuery])).toEqual([
      ['seen-1', 'stop', 1, 'Which laptop should I buy, under 1200 EUR.'],
      ['uu-1', 'stop', 1, "Which laptop is best for me, I don't have a particular preference on that."], // the fake rewriter appends every answer
      ['ut-1', 'stop', 1, 'Where should I rent a flat, with a quiet neighbourhood.'],
    ]);
    const mine = requests.slice(before);
    const consult = mine.filter((r) => r.body.model === 'llama-3-8b-ask');
    expect((consult[0]!.body.messages as { content: string }[])[1]!.content).toBe(
      `Conversation: [{'user': 'Which laptop should I buy?'}]\nInteraction trajectory: (none)\nPlease determine whether the user's request needs clarification. A request needs clarification if the user's intention contains missing or unfeasible details based on the tool parameters and call results in the interaction trajectory. If the user's intention requires clarification, answer "Yes"; if it is clear and feasible, answer "No".\nAnswer:`,
    );
    expect(consult[0]!.body).toMatchObject({ temperature: 0, max_tokens: 256 });
    expect(consult[0]!.body).not.toHaveProperty('chat_template_kwargs');
    const rewrites = mine.filter((r) => r.body.model === 'Qwen/Qwen3-8B');
    expect(rewrites.length).toBe(3);
    expect(rewrites.every((r) => (r.body.chat_template_kwargs as { enable_thinking: boolean }).enable_thinking === false)).toBe(true);
    expect((JSON.parse(readFileSync(out, 'utf8')) as EvalReport).method.label).toBe('CEP-Clarify+Rewrite');
  });

  it("their rows are in eval compare's Table 2 and Figure 3", async () => {
    const outDir = join(ds.dir, 'compare');
    expect(await quiet(() => run(['compare', join(ds.dir, 'mistral.json'), join(ds.dir, 'cep.json'), '--out', outDir, '--bootstrap', '20']))).toBe(0);
    const table2 = readFileSync(join(outDir, 'table2.md'), 'utf8');
    expect(table2).toMatch(/\| Mistral-Interact \|/);
    expect(table2).toMatch(/\| CEP-Clarify\+Rewrite \|/);
    const fig = readFileSync(join(outDir, 'figure3.md'), 'utf8');
    expect(fig).toMatch(/\| Mistral-Interact \|[^\n]*\| 1\.6/); // 5 asks over 3 episodes
    expect(fig).toMatch(/\| CEP-Clarify\+Rewrite \|[^\n]*\| 1\.00/);
    expect(existsSync(join(outDir, 'figure3.svg'))).toBe(true);
  }, 60_000);
});
