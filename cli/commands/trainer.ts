// `gsteer trainer serve`: the trainer as a service (trainer-serve.ts). A command group so later
// trainer-side commands sit beside it.
import { InputError } from '../../util/errors.ts';
import * as serve from './trainer-serve.ts';

export const summary = "gsteer's tfjs trainer behind the Tinker API (serve)";
export const usage = serve.usage;

export async function run(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === 'serve') return serve.run(rest);
  throw new InputError(
    `trainer: unknown subcommand ${sub === undefined ? '(none)' : `"${sub}"`}; use gsteer trainer serve --model DIR (gsteer trainer --help)`,
  );
}
