// Call records appended to a JSONL file (one line per attempt), e.g. RUN_DIR/llm_calls.jsonl.
// Each record is one synchronous append of one line (O_APPEND), so lines from concurrent
// calls never interleave and a killed process leaves at most its last line unwritten.
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { writeJsonlLine } from '../util/jsonl.ts';
import type { CallRecord, CallSink } from './records.ts';

export class JsonlCallSink implements CallSink {
  constructor(readonly file: string) {
    mkdirSync(dirname(file), { recursive: true });
  }

  record(r: CallRecord): void {
    appendFileSync(this.file, writeJsonlLine(r));
  }
}
