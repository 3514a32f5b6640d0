// The leak check (paper: "No held-out annotation or test interaction is used to construct or
// update these states"): no test instance's target value may appear in training-side state,
// i.e. in a user-state memory or profile, or in a training instance's offline profile; and
// no memory may name a test instance as its source. "Appear" = the test target's seed
// answer, normalized (lowercase, whitespace collapsed, end punctuation trimmed; at least 12
// characters, shorter answers like "yes" would match anything), is a substring of the text.
import { normalized } from './build/text.ts';
import type { Instance, UserState } from './schema.ts';
import type { Problem } from './problem.ts';

export interface Located<T> {
  value: T;
  file: string;
  line: number;
}

const MIN_CHARS = 12;

export function leakProblems(instances: readonly Located<Instance>[], states: readonly Located<UserState>[]): Problem[] {
  const testIds = new Set(instances.filter((i) => i.value.split === 'test').map((i) => i.value.id));
  const values = instances
    .filter((i) => i.value.split === 'test')
    .flatMap((i) => i.value.targets.map((t) => ({ inst: i.value.id, target: t.id, text: normalized(t.seedAnswer) })))
    .filter((v) => v.text.length >= MIN_CHARS);
  const out: Problem[] = [];
  const scan = (text: string, at: Omit<Problem, 'message'>, where: string) => {
    const n = normalized(text);
    for (const v of values) {
      if (n.includes(v.text))
        out.push({ ...at, message: `${where} contains the seed answer of test instance "${v.inst}" target "${v.target}" ("${v.text.slice(0, 50)}"); training state must not hold test annotations; remove it or rebuild with gsteer data build` });
    }
  };
  for (const s of states) {
    const at = { file: s.file, line: s.line, instanceId: s.value.userId };
    scan(s.value.profile, { ...at, field: 'profile' }, 'the profile');
    s.value.memories.forEach((m, i) => {
      if (m.sourceInstance !== undefined && testIds.has(m.sourceInstance))
        out.push({ ...at, field: `memories[${i}].sourceInstance`, message: `memory "${m.name}" comes from test instance "${m.sourceInstance}"; training state must be built from train instances only; remove it or rebuild with gsteer data build` });
      scan(m.value, { ...at, field: `memories[${i}].value` }, `memory "${m.name}"`);
    });
  }
  for (const i of instances) {
    if (i.value.split !== 'train' || !i.value.offlineProfile) continue;
    scan(i.value.offlineProfile, { file: i.file, line: i.line, instanceId: i.value.id, field: 'offlineProfile' }, 'the offline profile');
  }
  return out;
}
