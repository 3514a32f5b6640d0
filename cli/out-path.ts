// Where a command writes (--out), checked before anything runs: a file path that is a
// folder, a folder path that is a file, an output that is one of the command's inputs, or a
// folder that already holds something other than this command's own earlier output is refused
// with the path and the fix (a newcomer's typo must not overwrite a model, a raw dataset or a
// folder of photos). Commands that may replace their own output say so (data build --force).
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { InputError } from '../util/errors.ts';

const same = (a: string, b: string) => resolve(a) === resolve(b);
/** `inner` is `outer` or inside it. */
const within = (inner: string, outer: string) => {
  const r = relative(resolve(outer), resolve(inner));
  return r === '' || (!r.startsWith('..') && !r.startsWith('/'));
};

/** --out FILE: not a folder, its parent not a file, not one of `inputs`. */
export function checkOutFile(out: string, inputs: readonly string[] = [], flag = '--out'): void {
  if (existsSync(out) && statSync(out).isDirectory())
    throw new InputError(`${flag} ${out} is a folder; give a file path to write, e.g. ${join(out, 'out.jsonl')}`);
  const parent = dirname(resolve(out));
  if (existsSync(parent) && !statSync(parent).isDirectory())
    throw new InputError(`${flag} ${out}: ${parent} is a file, not a folder; give a path inside a folder`);
  const input = inputs.find((i) => same(i, out));
  if (input) throw new InputError(`${flag} ${out} is the input ${input}; write the output to another file (the input stays as it is)`);
}

export interface OutDirRule {
  /** Input paths (files or folders) the output must not be, nor hold. */
  inputs?: readonly string[];
  /** What the folder would be (a model, a data build ...), for the messages. */
  what: string;
  /** The folder holds this command's own earlier output, which it may replace. */
  ownOutput?: (dir: string) => boolean;
  /** What holds the folder now, when the command can tell (another build's manifest). */
  holds?: (dir: string) => string | null;
  /** The fix for a folder holding something else (default: a new or empty folder). */
  fix?: string;
}

/**
 * --out DIR: not a file, not an input (nor a folder holding one), and empty or this
 * command's own earlier output. Returns whether it holds earlier output (for --force).
 */
export function checkOutDir(out: string, rule: OutDirRule, flag = '--out'): 'new' | 'own' {
  if (existsSync(out) && !statSync(out).isDirectory())
    throw new InputError(`${flag} ${out} is a file; give a folder path for the ${rule.what} (it is created when missing)`);
  for (const input of rule.inputs ?? []) {
    if (same(input, out)) throw new InputError(`${flag} ${out} is the input ${input}; write the ${rule.what} to another folder (the input stays as it is)`);
    if (within(input, out)) throw new InputError(`${flag} ${out} holds the input ${input}; write the ${rule.what} to a folder of its own`);
  }
  if (!existsSync(out) || readdirSync(out).length === 0) return 'new';
  if (rule.ownOutput?.(out)) return 'own';
  const some = readdirSync(out).slice(0, 3).join(', ');
  const holds = rule.holds?.(out) ?? `${some}${readdirSync(out).length > 3 ? ', ...' : ''}`;
  throw new InputError(`${flag} ${out} is not empty (${holds}) and is not an earlier ${rule.what}; ${rule.fix ?? 'give a new or empty folder'}`);
}
