// The sequences of a micro-batch as a prefix tree (method §5.11; issue 22): a compressed trie
// whose nodes are runs of positions shared by every sequence below them. The G trajectories
// of a group share their first turn's prompt, the turns of an episode share its system
// prompt, query and profile: each such run becomes one node, computed once
// (prefix-logprobs.ts). Nodes are listed parents first (depth-first), and their tokens are
// laid out in that order as the rows [R] of one flat forward.
//
//   sequences  a b c d e        tree  [a b c] ─┬─ [d e]      rows  a b c d e f g
//              a b c f g                       └─ [f g]
//   rowOf[0] = [0 1 2 3 4], rowOf[1] = [0 1 2 5 6]
import { InputError } from '../util/errors.ts';

export interface TreeNode {
  parent: number; // index of the parent node, -1 for a root
  start: number; // absolute position of the node's first token (= the length of its ancestors)
  ids: number[]; // its token ids
  row: number; // its first row in the flat layout
  /** Rows of its ancestors' tokens, positions 0 .. start-1 in order (the keys before its own). */
  ancestorRows: Int32Array;
}

export interface PrefixTree {
  nodes: TreeNode[];
  rows: number; // R: tokens computed (sum of node lengths)
  /** Per sequence, the flat row of each of its positions. */
  rowOf: Int32Array[];
}

/** Build the tree of `seqs` (any order; empty sequences are refused). */
export function buildPrefixTree(seqs: readonly (readonly number[])[]): PrefixTree {
  seqs.forEach((s, b) => {
    if (s.length === 0) throw new InputError(`prefix tree: sequence ${b} is empty; every scored sequence needs at least one token`);
  });
  const nodes: TreeNode[] = [];
  const rowOf = seqs.map((s) => new Int32Array(s.length));
  let rows = 0;
  // members: sequences that agree on positions [0, pos); parent: the node ending at pos
  const visit = (members: number[], pos: number, parent: number, ancestors: Int32Array) => {
    const byToken = new Map<number, number[]>();
    for (const b of members) {
      if (seqs[b]!.length === pos) continue; // ends at the parent
      const t = seqs[b]![pos]!;
      const group = byToken.get(t);
      if (group) group.push(b);
      else byToken.set(t, [b]);
    }
    for (const group of byToken.values()) {
      // the run every member of the group shares from pos on
      let end = pos + 1;
      const first = seqs[group[0]!]!;
      for (;;) {
        if (end >= first.length) break;
        const t = first[end];
        if (!group.every((b) => seqs[b]!.length > end && seqs[b]![end] === t)) break;
        end += 1;
      }
      const node: TreeNode = { parent, start: pos, ids: first.slice(pos, end), row: rows, ancestorRows: ancestors };
      const index = nodes.push(node) - 1;
      for (const b of group) for (let t = pos; t < end; t++) rowOf[b]![t] = rows + t - pos;
      rows += end - pos;
      const own = Int32Array.from({ length: end - pos }, (_, i) => node.row + i);
      const below = new Int32Array(ancestors.length + own.length);
      below.set(ancestors);
      below.set(own, ancestors.length);
      visit(group, end, index, below);
    }
  };
  visit(
    seqs.map((_, b) => b),
    0,
    -1,
    new Int32Array(0),
  );
  return { nodes, rows, rowOf };
}

/**
 * Sequence order that puts sequences with long shared prefixes next to each other
 * (lexicographic by token ids; ties by index), so that contiguous micro-batches of it share
 * as much as a micro-batch of that size can.
 */
export function prefixOrder(seqs: readonly (readonly number[])[]): number[] {
  const cmp = (a: number, b: number): number => {
    const x = seqs[a]!;
    const y = seqs[b]!;
    const n = Math.min(x.length, y.length);
    for (let i = 0; i < n; i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
    return x.length - y.length || a - b;
  };
  return seqs.map((_, b) => b).sort(cmp);
}
