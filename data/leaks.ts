// The leak check (paper: "No held-out annotation or test interaction is used to construct or
// update these states"): no test instance's target value may appear in training-side state,
// i.e. in a user-state memory or profile, or in a training instance's offline profile; and
// no memory may name a test instance as its source. "Appear" = a test target's value, normalized
// (lowercase, whitespace collapsed, end punctuation trimmed; at least 12 characters, shorter
// answers like "yes" would match anything), is a substring of the text. A target's values are
// its whole seed answer and, when the answer opens with the target's description ("Budget:
// about 2000 euros", the embedded builder's form), the bare value after it, so a value copied
// without its description prefix is found too. A value that is also the value of one of the same
// user's TRAINING targets is not a leak: the same persona fact answers both, and the training
// state holds it from the training annotation (memory across a user's tasks is the point).
import { normalized } from './build/text.ts';
import type { Instance, Target, UserState } from './schema.ts';
import type { Problem } from './problem.ts';

export interface Located<T> {
  value: T;
  file: string;
  line: number;
}

const MIN_CHARS = 12;

/** The normalized values of a target: the whole seed answer, and the part after "<description>:" when it opens so. */
export function targetValues(t: Pick<Target, 'seedAnswer' | 'description'>): string[] {
  const whole = normalized(t.seedAnswer);
  const prefix = `${normalized(t.description)}:`;
  const bare = whole.startsWith(prefix) ? normalized(whole.slice(prefix.length)) : '';
  return [...new Set([whole, bare])].filter((v) => v.length >= MIN_CHARS);
}

export function leakProblems(instances: readonly Located<Instance>[], states: readonly Located<UserState>[]): Problem[] {
  const testIds = new Set(instances.filter((i) => i.value.split === 'test').map((i) => i.value.id));
  const values = instances
    .filter((i) => i.value.split === 'test')
    .flatMap((i) => i.value.targets.flatMap((t) => targetValues(t).map((text) => ({ inst: i.value.id, target: t.id, text }))));
  // user -> the values of that user's training targets (the state may hold those)
  const trainValues = new Map<string, Set<string>>();
  for (const i of instances.filter((x) => x.value.split === 'train')) {
    const set = trainValues.get(i.value.userId) ?? new Set<string>();
    for (const t of i.value.targets) for (const v of targetValues(t)) set.add(v);
    trainValues.set(i.value.userId, set);
  }
  const out: Problem[] = [];
  const scan = (text: string, userId: string, at: Omit<Problem, 'message'>, where: string) => {
    const n = normalized(text);
    const own = trainValues.get(userId);
    const reported = new Set<string>();
    for (const v of values) {
      const key = `${v.inst}\u0000${v.target}`;
      if (reported.has(key) || !n.includes(v.text) || own?.has(v.text)) continue;
      reported.add(key);
      out.push({
        ...at,
        message: `${where} contains the seed answer of test instance "${v.inst}" target "${v.target}" ("${v.text.slice(0, 50)}"); training state must not hold test annotations; remove it or rebuild with gsteer data build`,
      });
    }
  };
  for (const s of states) {
    const at = { file: s.file, line: s.line, instanceId: s.value.userId };
    scan(s.value.profile, s.value.userId, { ...at, field: 'profile' }, 'the profile');
    s.value.memories.forEach((m, i) => {
      if (m.sourceInstance !== undefined && testIds.has(m.sourceInstance))
        out.push({
          ...at,
          field: `memories[${i}].sourceInstance`,
          message: `memory "${m.name}" comes from test instance "${m.sourceInstance}"; training state must be built from train instances only; remove it or rebuild with gsteer data build`,
        });
      scan(m.value, s.value.userId, { ...at, field: `memories[${i}].value` }, `memory "${m.name}"`);
    });
  }
  for (const i of instances) {
    if (i.value.split !== 'train' || !i.value.offlineProfile) continue;
    scan(i.value.offlineProfile, i.value.userId, { file: i.file, line: i.line, instanceId: i.value.id, field: 'offlineProfile' }, 'the offline profile');
  }
  return out;
}
