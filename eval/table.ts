// A comparison table as data (eval/compare-tables.ts builds them) and its two renderings:
// markdown, every cell "value ± SE", and CSV, every cell as four columns (value, SE and the
// percentile interval's ends). Rounding: markdown uses the column's digits (the paper's:
// 4 for ratios, 2 for turns and P/Q scores); CSV keeps 6 decimals for every number.
import type { Estimate } from './bootstrap.ts';

export interface Column {
  key: string; // CSV header stem, e.g. "overall.wcov"
  label: string; // markdown header, e.g. "WCov"
  digits: number;
}

export interface Table {
  id: string; // file stem: table2 -> table2.md, table2.csv
  title: string;
  labels: { key: string; label: string }[]; // the leading text columns (method, DRA, threshold...)
  columns: Column[];
  rows: { labels: string[]; cells: Estimate[] }[];
  notes: string[];
}

const fixed = (x: number | null, d: number) => (x === null ? 'n/a' : x.toFixed(d));
const mdText = (s: string) => s.replace(/\\/g, '\\\\').replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** "0.4253 ± 0.0123"; "n/a" without a value; "0.4253 ± n/a" when the spread is undefined. */
export const cellText = (e: Estimate, digits: number) => (e.value === null ? 'n/a' : `${fixed(e.value, digits)} ± ${fixed(e.se, digits)}`);

export function toMarkdown(t: Table): string {
  const head = [...t.labels.map((l) => l.label), ...t.columns.map((c) => c.label)];
  const align = [...t.labels.map(() => '---'), ...t.columns.map(() => '---:')];
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  const rows = t.rows.map((r) => line([...r.labels.map(mdText), ...r.cells.map((e, j) => cellText(e, (t.columns[j] as Column).digits))]));
  const notes = t.notes.length ? ['', ...t.notes.map((n) => `- ${n}`)] : [];
  return [`## ${t.title}`, '', line(head), line(align), ...rows, ...notes].join('\n') + '\n';
}

/** RFC 4180 quoting: a field with a comma, quote or line break is quoted, quotes doubled. */
const csvField = (s: string) => (/[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);
const csvNum = (x: number | null) => (x === null ? '' : x.toFixed(6));

export function toCsv(t: Table): string {
  const head = [...t.labels.map((l) => l.key), ...t.columns.flatMap((c) => [c.key, `${c.key}.se`, `${c.key}.lo`, `${c.key}.hi`])];
  const rows = t.rows.map((r) => [...r.labels, ...r.cells.flatMap((e) => [e.value, e.se, e.lo, e.hi].map(csvNum))]);
  return [head, ...rows].map((cells) => cells.map(csvField).join(',')).join('\n') + '\n';
}
