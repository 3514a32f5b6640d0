// method §4: M* = the one-to-one matching of targets (rows) to covered slots (columns) that
// maximizes the total similarity; each row and each column is in at most one pair.
//
// Hungarian algorithm with row/column potentials (shortest augmenting paths), O(n^2 m) for
// an n x m matrix with n <= m; a taller matrix is solved transposed. We maximize sum S by
// minimizing sum (-S). With n <= m every row gets a column; on the rectangular side the
// unmatched columns simply stay unmatched. Pairs whose weight is 0 change no total, and
// callers that only care about positive similarity may drop them.

export interface Assignment {
  /** [row, col] pairs, sorted by row. */
  pairs: [number, number][];
  total: number;
}

/** `weights` is [n][m], finite numbers; returns the maximum-weight assignment. */
export function maxWeightMatching(weights: number[][]): Assignment {
  const n = weights.length;
  const m = n === 0 ? 0 : (weights[0] as number[]).length;
  if (n === 0 || m === 0) return { pairs: [], total: 0 };
  for (const row of weights) {
    if (row.length !== m) throw new Error(`internal: matching matrix rows differ in length (${row.length} vs ${m})`);
    for (const x of row) if (!Number.isFinite(x)) throw new Error(`internal: matching weight ${x} is not finite`);
  }
  if (n > m) {
    const t = Array.from({ length: m }, (_, j) => weights.map((row) => row[j] as number));
    const res = minCostRows(t.map((row) => row.map((x) => -x)));
    const pairs = res.map(([j, i]) => [i, j] as [number, number]).sort((a, b) => a[0] - b[0]);
    return { pairs, total: sumPairs(weights, pairs) };
  }
  const pairs = minCostRows(weights.map((row) => row.map((x) => -x)));
  return { pairs, total: sumPairs(weights, pairs) };
}

function sumPairs(w: number[][], pairs: [number, number][]): number {
  let s = 0;
  for (const [i, j] of pairs) s += (w[i] as number[])[j] as number;
  return s;
}

/**
 * Min-cost assignment of every row of `cost` [n][m], n <= m. Potentials u (rows), v (cols);
 * rows are added one at a time and a shortest augmenting path (Dijkstra on reduced costs)
 * is grown from each. Index 0 is a virtual column; real rows/cols are 1-based inside.
 */
function minCostRows(cost: number[][]): [number, number][] {
  const n = cost.length;
  const m = (cost[0] as number[]).length;
  const u = new Float64Array(n + 1);
  const v = new Float64Array(m + 1);
  const rowOfCol = new Int32Array(m + 1); // 0 = free
  const way = new Int32Array(m + 1);
  const c = (i: number, j: number) => (cost[i - 1] as number[])[j - 1] as number;
  for (let i = 1; i <= n; i++) {
    rowOfCol[0] = i;
    let j0 = 0;
    const minv = new Float64Array(m + 1).fill(Infinity);
    const used = new Uint8Array(m + 1);
    do {
      used[j0] = 1;
      const i0 = rowOfCol[j0] as number;
      let delta = Infinity;
      let j1 = 0;
      for (let j = 1; j <= m; j++) {
        if (used[j]) continue;
        const cur = c(i0, j) - (u[i0] as number) - (v[j] as number);
        if (cur < (minv[j] as number)) {
          minv[j] = cur;
          way[j] = j0;
        }
        if ((minv[j] as number) < delta) {
          delta = minv[j] as number;
          j1 = j;
        }
      }
      for (let j = 0; j <= m; j++) {
        if (used[j]) {
          u[rowOfCol[j] as number] = (u[rowOfCol[j] as number] as number) + delta;
          v[j] = (v[j] as number) - delta;
        } else minv[j] = (minv[j] as number) - delta;
      }
      j0 = j1;
    } while (rowOfCol[j0] !== 0);
    // Flip the augmenting path back to the virtual column.
    do {
      const j1 = way[j0] as number;
      rowOfCol[j0] = rowOfCol[j1] as number;
      j0 = j1;
    } while (j0 !== 0);
  }
  const pairs: [number, number][] = [];
  for (let j = 1; j <= m; j++) if (rowOfCol[j]) pairs.push([(rowOfCol[j] as number) - 1, j - 1]);
  return pairs.sort((a, b) => a[0] - b[0]);
}
