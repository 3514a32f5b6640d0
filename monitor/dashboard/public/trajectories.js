// The table of one update's trajectories: group, index, reward and its components, how the
// episode ended, its actions; a click on a row shows each turn (plan, action text, what the
// environment answered) and the refined query.
import { el, fmt, getJson, runUrl } from '/static/api.js';

function detailRow(t, cols) {
  const turns = t.turns.map((turn, i) =>
    el('div', { class: 'turn' }, el('b', {}, `${i + 1}. ${turn.action}`), ` ${turn.execute}`,
      turn.plan ? el('div', { class: 'small' }, `plan: ${turn.plan}`) : '',
      turn.observation ? el('div', { class: 'small' }, `→ ${turn.observation}`) : '',
      turn.simulatorReply ? el('div', { class: 'small raw' }, `simulator reply: ${turn.simulatorReply}`) : ''));
  const refined = t.refinedQuery ? el('div', { class: 'turn' }, el('b', {}, 'refined'), ` ${t.refinedQuery}`) : '';
  return el('tr', { class: 'detail' }, el('td', { colspan: String(cols) }, ...turns, refined));
}

function table(groups) {
  const comps = [...new Set(groups.flatMap((g) => g.trajectories.flatMap((t) => Object.keys(t.components))))].sort();
  const head = ['group', '#', 'reward', 'ended', 'turns', 'actions', ...comps];
  const body = el('tbody');
  for (const g of groups) {
    if (g.dropped) body.append(el('tr', {}, el('td', {}, g.groupId), el('td', { colspan: String(head.length - 1) }, `dropped: ${g.reason ?? ''}`)));
    for (const t of g.trajectories) {
      const row = el('tr', { class: 'traj', 'data-group': t.groupId, 'data-index': String(t.index) },
        el('td', {}, `${t.groupId} (${t.instanceId})`), el('td', {}, `${t.best ? '★ ' : ''}${t.index}`),
        el('td', { class: 'num' }, fmt(t.reward)), el('td', {}, t.invalidReason ? `${t.termination} (${t.invalidReason})` : t.termination),
        el('td', { class: 'num' }, String(t.turns.length)), el('td', {}, t.turns.map((x) => x.action).join(' → ')),
        ...comps.map((c) => el('td', { class: 'num comp' }, fmt(t.components[c]))));
      let open = null;
      row.addEventListener('click', () => {
        if (open) {
          open.remove();
          open = null;
        } else {
          open = detailRow(t, head.length);
          row.after(open);
        }
      });
      body.append(row);
    }
  }
  return el('table', { class: 'data' }, el('thead', {}, el('tr', {}, ...head.map((h) => el('th', {}, h)))), body);
}

export function showTrajectories(run, select, follow, box) {
  let timer = null;
  async function load(step) {
    const data = await getJson(runUrl(run, `/trajectories${step === null ? '' : `?step=${step}`}`));
    select.replaceChildren(...data.steps.map((s) => el('option', { value: String(s) }, String(s))));
    select.value = String(data.step);
    box.replaceChildren(data.groups.length ? table(data.groups) : el('p', { class: 'small' }, 'no trajectories on disk for this update'));
  }
  select.addEventListener('change', () => {
    follow.checked = false;
    load(Number(select.value)).catch((e) => console.error(e));
  });
  follow.addEventListener('change', () => follow.checked && load(null).catch((e) => console.error(e)));
  return {
    /** A new update landed: show it if following (debounced: a reset brings many at once). */
    refresh() {
      if (!follow.checked && select.options.length) return;
      clearTimeout(timer);
      timer = setTimeout(() => load(follow.checked ? null : Number(select.value)).catch((e) => console.error(e)), 300);
    },
  };
}
