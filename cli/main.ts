// `gsteer <command> ...`: each command is one file in cli/commands/, exporting
// `summary` (one line for the help), `usage` (full help) and `run(argv) -> exit code`.
// A module with no side effects: the entry point is cli/gsteer.mjs, which calls main().
import { InputError } from '../util/errors.ts';

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

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
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
    throw e;
  }
}
