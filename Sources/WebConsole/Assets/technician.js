// A technician's day (#/technician/<id>?date=YYYY-MM-DD): their visits that day in order of arrival window,
// the current distance of each, and "Running late", which moves every visit they have not reached yet in one
// call (POST /v1/technicians/{id}/delay). The day is read from GET /v1/visits?technicianId= every 2 seconds.
import { api, explain, session } from './api.js';
import { h, replace, windowText, dialog, busy } from './dom.js';
import { LABELS, isEnded } from './transitions.js';
import { eventButtons } from './visit.js';

const POLL_MS = 2000;
const PAGE = 100;
const MAX_PAGES = 5;

/** YYYY-MM-DD of a Date in the browser's time zone. */
export function isoDay(date) {
  const two = (n) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())}`;
}

/** The local midnight that starts `day` (YYYY-MM-DD), or today's when it is not a date. */
export function dayStart(day) {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day || '');
  const d = m ? new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : new Date();
  d.setHours(0, 0, 0, 0);
  return d;
}

/** The day after (or before, with -1) `day`. */
export function stepDay(day, by) {
  const d = dayStart(day);
  d.setDate(d.getDate() + by);
  return isoDay(d);
}

/** The distance as the day lists it: the current kilometres while on the way, nothing once there. */
export function distanceText(v) {
  const c = v.contentState || {};
  if (isEnded(v.status)) return '';
  if (v.status === 'onSite' || v.status === 'finishing') return 'On site';
  return c.kilometresAway === undefined || c.kilometresAway === null ? '' : `${Number(c.kilometresAway).toFixed(1)} km away`;
}

/** The visit's current technician id, from its history (the latest booking or reassignment): for a link from a
 * row that does not know it. */
export async function technicianOf(visitId) {
  const { events } = await api('GET', `/v1/visits/${encodeURIComponent(visitId)}/events`);
  for (const e of events.slice().reverse()) if (e.data && e.data.technician && e.data.technician.id) return e.data.technician.id;
  return null;
}

/** Finds a visit's technician, then shows their day on the visit's date. */
export function showTechnicianOf(view, visitId) {
  let stopped = false;
  replace(view, h('p', { class: 'muted' }, 'Finding the technician…'));
  Promise.all([technicianOf(visitId), api('GET', `/v1/visits/${encodeURIComponent(visitId)}`)]).then(([id, visit]) => {
    if (stopped) return;
    if (!id) { replace(view, h('p', { class: 'error' }, 'This visit names no technician.')); return; }
    const start = visit.contentState && visit.contentState.arrivalStartEpoch;
    const day = start ? isoDay(new Date(start * 1000)) : isoDay(new Date());
    location.replace(`#/technician/${encodeURIComponent(id)}?date=${day}`);
  }).catch((e) => { if (!stopped) replace(view, h('p', { class: 'error', role: 'alert' }, explain(e))); });
  return { stop() { stopped = true; } };
}

export function showTechnician(view, technicianId, day) {
  let stopped = false;
  let timer = null;
  let lastJSON = '';
  day = isoDay(dayStart(day));
  const from = dayStart(day).getTime() / 1000;
  const until = dayStart(stepDay(day, 1)).getTime() / 1000;

  const message = h('p', { class: 'error', role: 'alert' });
  const result = h('p', { class: 'muted', testid: 'delay-result', role: 'status' });
  const title = h('h1', { testid: 'technician-name' }, technicianId);
  const list = h('ol', { class: 'day-list', testid: 'technician-day' });
  const late = h('button', { type: 'button', testid: 'running-late', onclick: () => runningLate() }, 'Running late…');
  late.hidden = session.role !== 'dispatcher';
  const go = (d) => { location.hash = `#/technician/${encodeURIComponent(technicianId)}?date=${d}`; };
  const today = isoDay(new Date());

  replace(view,
    h('p', {}, h('a', { href: '#/board' }, '← Board')),
    h('div', { class: 'toolbar' }, title, h('span', { class: 'muted' }, technicianId), late),
    h('div', { class: 'row day-steps' },
      h('button', { type: 'button', class: 'secondary', testid: 'day-previous', onclick: () => go(stepDay(day, -1)) }, '← Previous day'),
      h('strong', { testid: 'day' }, dayStart(day).toLocaleDateString([], { weekday: 'long', day: 'numeric', month: 'long' }),
        day === today ? ' (today)' : ''),
      h('button', { type: 'button', class: 'secondary', testid: 'day-next', onclick: () => go(stepDay(day, 1)) }, 'Next day →'),
      day === today ? null : h('button', { type: 'button', class: 'link', onclick: () => go(today) }, 'Today')),
    message, result, list);

  async function load() {
    let visits = [];
    let cursor = null;
    for (let i = 0; i < MAX_PAGES; i++) {
      const p = new URLSearchParams({ technicianId, limit: String(PAGE) });
      if (cursor) p.set('cursor', cursor);
      const page = await api('GET', '/v1/visits?' + p.toString());
      visits = visits.concat(page.visits);
      cursor = page.nextCursor;
      if (!cursor) break;
    }
    return visits
      .filter((v) => { const s = v.contentState && v.contentState.arrivalStartEpoch; return s >= from && s < until; })
      .sort((a, b) => a.contentState.arrivalStartEpoch - b.contentState.arrivalStartEpoch
        || a.contentState.arrivalEndEpoch - b.contentState.arrivalEndEpoch || (a.visitId < b.visitId ? -1 : 1));
  }

  function draw(visits) {
    const named = visits.find((v) => v.contentState && v.contentState.technicianName);
    if (named) title.textContent = named.contentState.technicianName;
    replace(list, visits.length === 0
      ? h('li', { class: 'muted' }, 'No visit for this technician on this day.')
      : visits.map((v) => {
        const a = v.attributes || {};
        return h('li', { class: 'day-visit card', testid: 'technician-visit', 'data-visit-id': v.visitId, 'data-status': v.status },
          h('div', { class: 'day-when nowrap' }, windowText(v.contentState)),
          h('div', { class: 'day-what' },
            h('a', { href: '#/visit/' + encodeURIComponent(v.visitId) }, a.jobSummary ?? v.visitId), ' · ',
            a.customerFirstName ?? '(erased)', h('div', { class: 'muted small' }, a.serviceAddress ?? '')),
          h('div', {}, h('span', { class: 'status ' + v.status, testid: 'visit-status' }, LABELS[v.status] || v.status)),
          h('div', { class: 'day-distance', testid: 'distance' }, distanceText(v)),
          h('div', { class: 'events' }, eventButtons(v, () => refresh(), (text) => { message.textContent = text; })));
      }));
  }

  async function runningLate() {
    result.textContent = '';
    message.textContent = '';
    const v = await dialog({
      title: `${title.textContent} is running late`, testid: 'delay', ok: 'Move the visits',
      lines: ['Every visit not reached yet (scheduled, en route or nearby) moves later by this much; each customer\'s Live Activity shows the new window.'],
      fields: [
        { name: 'minutes', label: 'Minutes late', inputmode: 'numeric', testid: 'delay-minutes', hint: 'Whole minutes, 1 to 720 (12 hours).' },
        { name: 'reason', label: 'Reason (optional)', required: false, testid: 'delay-reason' }],
      validate: ({ minutes }) => (/^\d+$/.test(minutes) && Number(minutes) >= 1 && Number(minutes) <= 720
        ? null : `"${minutes}" is not a delay: type whole minutes from 1 to 720.`),
    });
    if (!v) return;
    const body = { minutes: Number(v.minutes) };
    if (v.reason) body.reason = v.reason;
    // One key per decision: a retry of this same request cannot move the visits twice.
    const once = { 'Idempotency-Key': 'console-' + crypto.randomUUID() };
    try {
      const answer = await busy([late], () => api('POST', `/v1/technicians/${encodeURIComponent(technicianId)}/delay`, body, undefined, once));
      const n = answer.visits.length;
      result.textContent = n === 0 ? 'No visit to move: none is scheduled, en route or nearby.'
        : `Moved ${n} visit${n === 1 ? '' : 's'} ${body.minutes} minute${body.minutes === 1 ? '' : 's'} later.`;
      refresh();
    } catch (e) { message.textContent = explain(e); }
  }

  async function refresh() {
    clearTimeout(timer);
    try {
      const visits = await load();
      if (stopped) return;
      const json = JSON.stringify(visits);
      if (json !== lastJSON) { lastJSON = json; draw(visits); }
      if (message.dataset.kind === 'poll') { message.textContent = ''; delete message.dataset.kind; }
    } catch (e) {
      if (stopped) return;
      message.textContent = explain(e);
      message.dataset.kind = 'poll';
    }
    if (!stopped) timer = setTimeout(refresh, POLL_MS);
  }

  refresh();
  return { stop() { stopped = true; clearTimeout(timer); } };
}
