// Child process of the cache SIGKILL test: asks N questions one after another through a
// request-cached endpoint. Usage: node --import tsx cache-child.ts BASE_URL CACHE_DIR N
import { z } from 'zod';
import { withRequestCache } from '../../endpoints/cache.ts';
import { createEndpoint } from '../../endpoints/endpoint.ts';

const [baseUrl, dir, n] = process.argv.slice(2) as [string, string, string];
const ep = withRequestCache(createEndpoint({ role: 'builder', baseUrl, model: 'Qwen/Qwen3-32B', timeoutMs: 60_000, maxRetries: 2, concurrency: 1 }), dir);
for (let i = 0; i < Number(n); i++)
  await ep.chatJson({ messages: [{ role: 'user', content: `q${i}` }] }, { name: 'a', schema: z.object({ answer: z.string() }) });
