// Series transforms the charts apply in the browser (no server round trip per slider move).

/** TensorBoard's smoothing: an EMA with weight w in [0, 1), debiased so it starts at the first value; nulls stay null. */
export function ema(ys, w) {
  if (!w) return ys.slice();
  let acc = 0;
  let n = 0;
  return ys.map((y) => {
    if (y === null || y === undefined || !Number.isFinite(y)) return null;
    acc = acc * w + (1 - w) * y;
    n++;
    return acc / (1 - w ** n);
  });
}

/** wall_time counts from each (re)start of a run; a resumed run's clock continues from the update before. */
export function runningWall(records) {
  let offset = 0;
  let prev = null;
  return records.map((r) => {
    const w = typeof r.wall_time === 'number' ? r.wall_time : null;
    if (w === null) return null;
    if (prev !== null && w < prev) offset += prev;
    prev = w;
    return w + offset;
  });
}

/** 754 -> "12:34", 4000 -> "1:06:40" */
export function clock(s) {
  if (s === null || s === undefined) return '';
  const t = Math.round(s);
  const h = Math.floor(t / 3600);
  const m = Math.floor((t % 3600) / 60);
  const sec = String(t % 60).padStart(2, '0');
  return h ? `${h}:${String(m).padStart(2, '0')}:${sec}` : `${m}:${sec}`;
}
