// Which teacher writes q* at Stop (method §7): cfg.judge.kind = llm -> the LLM teacher over
// the judge endpoint; rule -> the embedded template (teacher.ts).
import { endpointOptions } from '../../configs/endpoints.ts';
import type { RunConfig } from '../../configs/schema.ts';
import { createEndpoint, type CallSink } from '../../endpoints/index.ts';
import { assert } from '../../util/errors.ts';
import { llmTeacher, templateTeacher, type Teacher } from './teacher.ts';

/** The teacher calls the judge's server as role "teacher" (its own call records and metrics). */
export function teacherFromConfig(cfg: RunConfig, sink?: CallSink): Teacher {
  switch (cfg.judge.kind) {
    case 'rule':
      return templateTeacher;
    case 'llm':
      assert(cfg.judge.baseUrl, 'judge.baseUrl checked by the config schema');
      return llmTeacher({ endpoint: createEndpoint(endpointOptions('teacher', cfg.judge), sink ? { sink } : {}), maxTokens: cfg.judge.maxTokens });
    default: {
      const never: never = cfg.judge.kind;
      throw new Error(`internal: unknown judge kind ${String(never)}`);
    }
  }
}
