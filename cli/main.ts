// `gsteer <command> ...`: each command is one file in cli/commands/, exporting
// `summary` (one line for the help), `usage` (full help) and `run(argv) -> exit code`.
// A module with no side effects: the entry point is cli/gsteer.mjs, which calls main().
// main() routes everything the process prints through the masking rule (util/secrets.ts),
// and the commands that write a run directory create its files 0600 and folders 0700.
import { InputError } from '../util/errors.ts';
import { maskValues } from '../util/secrets.ts';

export interface Command {
  summary: string;
  usage: string;
  run(argv: string[]): Promise<number>;
}

/** command name -> module under cli/commands/ */
const COMMANDS: Record<string, string> = {
  train: 'train',
  resume: 'resume',
  clean: 'clean',
  worker: 'worker',
  sft: 'sft',
  eval: 'eval',
  serve: 'serve',
  trainer: 'trainer',
  monitor: 'monitor',
  model: 'model',
  data: 'data',
  reward: 'reward',
  embed: 'embed',
  config: 'config',
  demo: 'demo',
};

async function loadCommand(name: string): Promise<Command | null> {
  const file = COMMANDS[name];
  if (!file) return null;
  try {
    return (await import(new URL(`./commands/${file}.ts`, import.meta.url).href)) as Command;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND' && String(e).includes(`commands/${file}.ts`)) return null;
    throw e;
  }
}

async function help(): Promise<string> {
  const lines = ['usage: gsteer <command> [options]   (gsteer <command> --help for details)', '', 'commands:'];
  for (const name of Object.keys(COMMANDS)) {
    const cmd = await loadCommand(name);
    if (cmd) lines.push(`  ${name.padEnd(9)} ${cmd.summary}`);
  }
  return lines.join('\n');
}

/** Commands that write run directories (configs, logs, adapters, records): owner-only files. */
const RUN_WRITERS = new Set(['train', 'resume', 'worker', 'demo']);

let masked = false;
/**
 * Every string this process writes to stdout / stderr (its logs, for a child of a run)
 * passes the masking rule; a write that fails (a log file on a full disk) is dropped: a log
 * line must never take a worker down.
 */
function maskOutput(): void {
  if (masked) return;
  masked = true;
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write.bind(stream) as (chunk: unknown, ...rest: unknown[]) => boolean;
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      try {
        return write(typeof chunk === 'string' ? maskValues(chunk) : chunk, ...rest);
      } catch {
        return false;
      }
    }) as typeof stream.write;
    stream.on('error', () => undefined);
  }
}

export async function main(argv: string[]): Promise<number> {
  maskOutput();
  const [name, ...rest] = argv;
  if (name && RUN_WRITERS.has(name)) process.umask(0o077);
  if (!name) {
    // No command is a usage error: the usage goes to stderr, exit 2.
    console.error(await help());
    return 2;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    console.log(await help());
    return 0;
  }
  const cmd = await loadCommand(name);
  if (!cmd) {
    console.error(`gsteer: unknown command "${name}"\n\n${await help()}`);
    return 2;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    console.log(cmd.usage);
    return 0;
  }
  try {
    return await cmd.run(rest);
  } catch (e) {
    if (e instanceof InputError) {
      console.error(`gsteer ${name}: ${e.message}`);
      return 2;
    }
    // node:util parseArgs: an unknown option, a missing option value, an extra positional
    if (isArgsError(e)) {
      console.error(`gsteer ${name}: ${argsProblem(e)}\n\n${cmd.usage}`);
      return 2;
    }
    throw e;
  }
}

const isArgsError = (e: unknown): e is Error & { code: string } =>
  e instanceof Error && typeof (e as { code?: unknown }).code === 'string' && (e as unknown as { code: string }).code.startsWith('ERR_PARSE_ARGS_');

/** parseArgs' message, with the fix. */
function argsProblem(e: Error & { code: string }): string {
  const msg = e.message.replace(/\. To specify a positional argument.*$/s, '').replace(/\s+$/, '');
  switch (e.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `${msg}; the options this command takes are listed below`;
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `${msg} (usage below)`;
    default:
      return `${msg} (usage below)`;
  }
}
