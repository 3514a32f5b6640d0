// `node --import tsx workers/synthetic/server-main.ts --port P --latency-ms L`: the
// synthetic policy server as its own process (what `gsteer train` starts in place of the
// embedded server when GSTEER_PARTS=synthetic). Prints its URL on the first stdout line.
import { parseArgs } from 'node:util';
import { startSyntheticServer } from './policy-server.ts';

const { values } = parseArgs({ options: { port: { type: 'string', default: '0' }, 'latency-ms': { type: 'string', default: '0' } } });
const server = await startSyntheticServer({ port: Number(values.port), latencyMs: Number(values['latency-ms']) });
console.log(server.url);
const stop = () => void server.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
