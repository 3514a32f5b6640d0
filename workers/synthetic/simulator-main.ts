// `node --import tsx workers/synthetic/simulator-main.ts --port P [--timing JSON]`: the
// synthetic simulator endpoint as its own process (bench/fleet); --timing is a JSON object of
// SimulatorTiming fields over DEFAULT_SIMULATOR. Prints its URL on the first stdout line.
import { parseArgs } from 'node:util';
import { DEFAULT_SIMULATOR, startSimulatorServer, type SimulatorTiming } from './simulator-server.ts';

const { values } = parseArgs({
  options: { port: { type: 'string', default: '0' }, timing: { type: 'string', default: '{}' }, seed: { type: 'string', default: '1' } },
});
const timing: SimulatorTiming = { ...DEFAULT_SIMULATOR, ...(JSON.parse(values.timing) as Partial<SimulatorTiming>) };
const server = await startSimulatorServer(timing, { port: Number(values.port), seed: Number(values.seed) });
console.log(server.url);
const stop = () => void server.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
