// `node --import tsx workers/synthetic/server-main.ts --port P --latency-ms L [--batching JSON]`:
// the synthetic policy server as its own process (what `gsteer train` starts in place of the
// embedded server when GSTEER_PARTS=synthetic; bench/fleet starts it with --batching, a JSON
// object of BatchingOptions fields over DEFAULT_BATCHING). Prints its URL on the first stdout line.
import { parseArgs } from 'node:util';
import { DEFAULT_BATCHING, type BatchingOptions } from './batching.ts';
import { startSyntheticServer } from './policy-server.ts';

const { values } = parseArgs({
  options: { port: { type: 'string', default: '0' }, 'latency-ms': { type: 'string', default: '0' }, batching: { type: 'string' } },
});
const batching: BatchingOptions | undefined = values.batching
  ? { ...DEFAULT_BATCHING, ...(JSON.parse(values.batching) as Partial<BatchingOptions>) }
  : undefined;
const server = await startSyntheticServer({ port: Number(values.port), latencyMs: Number(values['latency-ms']), ...(batching ? { batching } : {}) });
console.log(server.url);
const stop = () => void server.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
