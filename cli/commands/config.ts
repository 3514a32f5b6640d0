// `gsteer config show`: print the resolved run config (defaults + files + --set).
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { loadConfig, printableConfig } from '../../configs/load.ts';
import { InputError } from '../../util/errors.ts';

export const summary = 'print the resolved run config (defaults, YAML overrides, --set)';
export const usage = `usage: gsteer config show [--config FILE ...] [--set key=value ...]

Prints the config every command would run with, after the paper defaults
(configs/schema.ts), the YAML override files in order, then --set overrides. \${VAR}
references print as written; a secret written out in a file prints as ***.`;

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { config: { type: 'string', multiple: true }, set: { type: 'string', multiple: true } },
  });
  if (positionals[0] !== 'show') {
    console.error(usage);
    return 2;
  }
  if (positionals.length > 1)
    throw new InputError(
      `config show: unexpected ${positionals
        .slice(1)
        .map((p) => `"${p}"`)
        .join(', ')}; config files go after --config\n\n${usage}`,
    );
  const cfg = loadConfig(values.config ?? [], values.set ?? []);
  process.stdout.write(stringify(printableConfig(cfg)));
  return 0;
}
