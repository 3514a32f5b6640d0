// Which teacher writes q* at Stop (method §7): cfg.judge.kind = llm -> the LLM teacher over
// the judge endpoint; rule -> the embedded template (teacher.ts).
import type { RunConfig } from '../../configs/schema.ts';
import { assert } from '../../util/errors.ts';
import { llmTeacher, templateTeacher, type Teacher } from './teacher.ts';

export function teacherFromConfig(cfg: RunConfig): Teacher {
  switch (cfg.judge.kind) {
    case 'rule':
      return templateTeacher;
    case 'llm':
      assert(cfg.judge.baseUrl, 'judge.baseUrl checked by the config schema');
      return llmTeacher({ baseUrl: cfg.judge.baseUrl, model: cfg.judge.model, apiKeyEnv: cfg.judge.apiKeyEnv });
    default: {
      const never: never = cfg.judge.kind;
      throw new Error(`internal: unknown judge kind ${String(never)}`);
    }
  }
}
