// Factor extractors (method §8): the rule-based one on worked examples, and the LLM one against
// a scripted /v1/chat/completions server (strict JSON list; malformed -> [] and a log line).
import { describe, it, expect, afterEach } from 'vitest';
import fc from 'fast-check';
import { clauses, contentWords, isRestatement, ruleFactors, sentences } from '../../eval/extractor-rule.ts';
import { createEndpoint } from '../../endpoints/index.ts';
import { LlmFactorExtractor, factorListSchema, EXTRACTOR_SYSTEM_PROMPT } from '../../eval/extractor-llm.ts';
import { options, recordingDeps } from '../endpoints/helpers.ts';
import { chatBody, startScriptedServer, type ScriptedServer } from '../rollout/helpers/scripted-server.ts';
import { loadConfig } from '../../configs/load.ts';
import { extractorFrom } from '../../eval/extractors.ts';

describe('rule-based factor extractor', () => {
  it('keeps the user-specific constraint clauses and drops the restatement', () => {
    // "Recommend a laptop": content words {laptop} (recommend is a generic request verb), all
    // in the query -> restatement. The three constraint clauses share no content word with it.
    expect(
      ruleFactors(
        'Recommend a laptop under 1200 EUR for an ecology PhD student who flies to the UK and the US twice a year.',
        'Which laptop should I buy for my research?',
      ),
    ).toEqual(['under 1200 EUR', 'for an ecology PhD student', 'who flies to the UK and the US twice a year']);
  });

  it('splits sentences and clauses; numbers and "City, State" stay whole', () => {
    const q =
      "Research a one-week family summer vacation in July. For two adults and two kids aged 9 and 6, with a total budget of about $3,000; vegetarian-friendly food (one child has a peanut allergy), within a day's drive of Columbus, Ohio.";
    expect(sentences(q)).toHaveLength(3);
    expect(ruleFactors(q, 'Can you research a summer vacation for my family? We want something fun for a week in July.')).toEqual([
      'For two adults and two kids aged 9 and 6',
      'with a total budget of about $3,000',
      'vegetarian-friendly food',
      'one child has a peanut allergy',
      "within a day's drive of Columbus, Ohio",
    ]);
  });

  it('restatement rule: at least half of the content words in the query', () => {
    const qw = new Set(contentWords('Which laptop should I buy for my research?'));
    expect([...qw].sort()).toEqual(['buy', 'laptop']); // "research" is a generic request verb
    expect(isRestatement('a good laptop to buy', qw)).toBe(true); // {laptop, buy}: 2/2
    expect(isRestatement('a light laptop', qw)).toBe(true); // {light, laptop}: 1/2 = 0.5
    expect(isRestatement('a light laptop with Linux', qw)).toBe(false); // {light, laptop, linux}: 1/3
    expect(isRestatement('for me', qw)).toBe(true); // no content word
  });

  it('de-duplicates case-insensitively, strips joiners, and returns [] for a pure restatement', () => {
    expect(clauses('and with Linux, With linux')).toEqual(['with Linux', 'With linux']);
    expect(ruleFactors('Find a laptop with Linux, With linux.', 'laptop?')).toEqual(['with Linux']);
    expect(ruleFactors('Which laptop should I buy?', 'Which laptop should I buy?')).toEqual([]);
  });
});

describe('rule-based factor extractor, properties', () => {
  const text = fc
    .array(
      fc.constantFrom(
        'laptop',
        'under',
        '1200',
        'EUR',
        'for',
        'with',
        'Linux',
        'and',
        'who',
        'travels',
        'Ohio',
        'Columbus',
        ',',
        '.',
        ';',
        '(',
        ')',
        ' - ',
        '$3,000',
        'buy',
      ),
      { maxLength: 25 },
    )
    .map((ws) => ws.join(' '));
  it('never throws; every factor is a distinct piece of q* that is not a restatement of the query', () => {
    fc.assert(
      fc.property(text, text, (q, query) => {
        const fs = ruleFactors(q, query);
        const qw = new Set(contentWords(query));
        expect(new Set(fs.map((f) => f.toLowerCase())).size).toBe(fs.length);
        for (const f of fs) {
          expect(q).toContain(f);
          expect(isRestatement(f, qw)).toBe(false);
        }
        // the original query itself contributes nothing new
        expect(ruleFactors(query, query).every((f) => !isRestatement(f, qw))).toBe(true);
      }),
    );
  });
});

describe('LLM factor extractor', () => {
  let server: ScriptedServer | null = null;
  afterEach(async () => {
    await server?.close();
    server = null;
  });

  it('reads a strict {"factors": [...]} object, de-duplicated', () => {
    expect(factorListSchema.parse({ factors: ['budget under 1200 EUR', ' flies abroad ', 'Budget under 1200 EUR', ' '] })).toEqual([
      'budget under 1200 EUR',
      'flies abroad',
    ]);
    expect(factorListSchema.parse({ factors: [] })).toEqual([]);
    expect(factorListSchema.safeParse(['a']).success).toBe(false); // a bare list is not the schema
    expect(factorListSchema.safeParse({ factors: ['a', 3] }).success).toBe(false);
    expect(factorListSchema.safeParse({ factors: [], why: 'x' }).success).toBe(false);
  });

  it('sends the fixed prompt with the original and refined query under a JSON schema; a reply refused every time -> [] and a log', async () => {
    const replies = ['<think>hm</think>\n```json\n{"factors": ["under 1200 EUR", "ecology PhD student"]}\n```', 'The factors are: budget.'];
    server = await startScriptedServer((_body, n) => ({ body: chatBody(replies[n] ?? '[]') }));
    const logs: string[] = [];
    const deps = recordingDeps();
    const ex = new LlmFactorExtractor({
      endpoint: createEndpoint(options(server.baseUrl, { role: 'extractor', model: 'gpt-test', maxRetries: 0 }), deps),
      maxTokens: 1024,
      log: (m) => logs.push(m),
    });
    const inst = { id: 'i1', query: 'Which laptop?' };
    expect(await ex.extract('Recommend a laptop under 1200 EUR.', inst)).toEqual(['under 1200 EUR', 'ecology PhD student']);
    expect(await ex.extract('Recommend a laptop.', inst)).toEqual([]);
    expect(logs).toHaveLength(1);
    expect(logs[0]).toContain('no acceptable reply for instance i1');
    expect(logs[0]).toContain('not_json');
    expect(deps.records.map((r) => r.status)).toEqual(['ok', 'reply_error:not_json']);
    const body = server.requests[0]!.body as { model: string; temperature: number; messages: { role: string; content: string }[] };
    expect(server.requests[0]!.path).toBe('/v1/chat/completions');
    expect(body.model).toBe('gpt-test');
    expect(body.temperature).toBe(0);
    expect((body as unknown as { response_format: { type: string; json_schema: { name: string } } }).response_format).toMatchObject({
      type: 'json_schema',
      json_schema: { name: 'framing_factors' },
    });
    expect(body.messages).toEqual([
      { role: 'system', content: EXTRACTOR_SYSTEM_PROMPT },
      { role: 'user', content: 'ORIGINAL REQUEST: Which laptop?\nREFINED QUERY: Recommend a laptop under 1200 EUR.' },
    ]);
  });
});

describe('extractor from the run config', () => {
  it('rule by default; llm needs eval.extractor.baseUrl (the rule and the fix)', () => {
    expect(extractorFrom(loadConfig([], []).eval.extractor).name).toBe('rule');
    expect(extractorFrom(loadConfig([], ['eval.extractor.kind=llm', 'eval.extractor.baseUrl=http://127.0.0.1:9/v1']).eval.extractor).name).toBe(
      'llm:gpt-5.4-2026-03-05',
    );
    expect(() => loadConfig([], ['eval.extractor.kind=llm'])).toThrow('eval.extractor.kind is "llm" but eval.extractor.baseUrl is not set');
  });
});
