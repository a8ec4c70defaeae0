// The day by technician (the board's timeline): one row per technician with a visit that day, a time axis, each
// visit a block at its arrival window coloured by status with its distance, from GET /v1/technicians. Also the
// technicians a booking or a reassignment picks from (name, avatar and van filled in from the choice).
import { api } from './api.js';
import { h, replace, clock, hour as hourText, windowText } from './dom.js';
import { LABELS, isEnded } from './transitions.js';
import { badges, isLate } from './exceptions.js';
import { dayStart, isoDay, stepDay } from './technician.js';

/** The UTC dates (YYYY-MM-DD) a local day overlaps: the API's days are UTC ones. */
function utcDates(day) {
  const from = dayStart(day).getTime();
  const until = dayStart(stepDay(day, 1)).getTime() - 1;
  return [...new Set([new Date(from).toISOString().slice(0, 10), new Date(until).toISOString().slice(0, 10)])];
}

/** The technicians with a visit whose window starts on the browser's `day` (YYYY-MM-DD), each with only those
 * visits: one or two reads of GET /v1/technicians (a local day spans at most two UTC days), merged. */
export async function techniciansOn(day) {
  const from = dayStart(day).getTime() / 1000;
  const until = dayStart(stepDay(day, 1)).getTime() / 1000;
  const answers = await Promise.all(utcDates(day).map((d) => api('GET', '/v1/technicians?date=' + d)));
  const byId = new Map();
  for (const { technicians } of answers) {
    for (const t of technicians) {
      const visits = t.visits.filter((v) => v.arrivalWindow.start >= from && v.arrivalWindow.start < until);
      const seen = byId.get(t.id);
      if (seen) seen.visits.push(...visits.filter((v) => !seen.visits.some((s) => s.visitId === v.visitId)));
      else byId.set(t.id, { ...t, visits });
    }
  }
  return [...byId.values()].filter((t) => t.visits.length)
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.id < b.id ? -1 : 1));
}

let choices = { at: 0, list: [] };
/** The technicians to pick from when booking or reassigning: those with a visit today or tomorrow (the API
 * keeps each one's latest name, avatar and van); read at most every 30 s. Empty when the list cannot be read. */
export async function technicianChoices() {
  if (Date.now() - choices.at < 30_000) return choices.list;
  const today = isoDay(new Date());
  try {
    const lists = await Promise.all([today, stepDay(today, 1)].map((d) => techniciansOn(d)));
    const byId = new Map();
    for (const t of lists.flat()) if (!byId.has(t.id)) byId.set(t.id, t);
    choices = { at: Date.now(), list: [...byId.values()].sort((a, b) => (a.name < b.name ? -1 : 1)) };
  } catch { choices = { at: Date.now(), list: [] }; }
  return choices.list;
}

/** Lays a row's visits in lanes so that overlapping windows do not cover each other. */
function lanes(visits) {
  const ends = [];
  return visits.map((v) => {
    let lane = ends.findIndex((end) => end <= v.arrivalWindow.start);
    if (lane < 0) { lane = ends.length; ends.push(0); }
    ends[lane] = v.arrivalWindow.end;
    return lane;
  });
}

/**
 * Draws the day into `box`. `visitsById`: the board's loaded visits (names, job, stale date) for search and
 * exceptions; `keep(v)`: whether a block matches the board's search; `kindsOf(visitId)`: the board's
 * exceptions of a loaded visit (a visit the board has not loaded is checked for lateness alone).
 */
export function drawTimeline(box, technicians, day, { visitsById, keep, kindsOf }) {
  const from = dayStart(day).getTime() / 1000;
  const all = technicians.flatMap((t) => t.visits);
  let firstHour = 7, lastHour = 19;
  for (const v of all) {
    firstHour = Math.min(firstHour, Math.floor((v.arrivalWindow.start - from) / 3600));
    lastHour = Math.max(lastHour, Math.ceil((Math.min(v.arrivalWindow.end, from + 86_400) - from) / 3600));
  }
  firstHour = Math.max(0, firstHour);
  lastHour = Math.min(24, Math.max(lastHour, firstHour + 1));
  const span = (lastHour - firstHour) * 3600;
  const start = from + firstHour * 3600;
  const pct = (t) => `${Math.min(100, Math.max(0, ((t - start) / span) * 100))}%`;

  const axis = h('div', { class: 'tl-axis', 'aria-hidden': 'true' });
  for (let hour = firstHour; hour <= lastHour; hour += lastHour - firstHour > 12 ? 2 : 1) {
    const tick = h('span', { class: 'tl-tick' }, hourText(from + hour * 3600));
    tick.style.left = pct(from + hour * 3600);
    axis.append(tick);
  }
  const now = Date.now() / 1000;
  const nowLine = () => {
    if (now < start || now > start + span) return null;
    const line = h('div', { class: 'tl-now', title: 'Now', 'aria-hidden': 'true' });
    line.style.left = pct(now);
    return line;
  };

  const rows = technicians.map((t) => {
    const shown = t.visits.filter((v) => keep(t, v));
    if (!shown.length) return null;
    const laneOf = lanes(shown);
    const track = h('div', { class: 'tl-track' });
    track.style.setProperty('--lanes', String(Math.max(...laneOf) + 1));
    const line = nowLine();
    if (line) track.append(line);
    shown.forEach((v, i) => {
      const loaded = visitsById.get(v.visitId);
      const c = loaded ? loaded.contentState : { arrivalStartEpoch: v.arrivalWindow.start, arrivalEndEpoch: v.arrivalWindow.end };
      const km = v.kilometresAway === null || v.kilometresAway === undefined || isEnded(v.status) ? '' : ` · ${Number(v.kilometresAway).toFixed(1)} km`;
      const kinds = loaded ? kindsOf(v.visitId) : (isLate({ status: v.status, contentState: c }) ? [{ kind: 'late' }] : []);
      const who = loaded ? ` · ${loaded.attributes?.customerFirstName ?? ''} · ${loaded.attributes?.jobSummary ?? ''}` : '';
      const block = h('a', { class: 'tl-visit ' + v.status, testid: 'timeline-visit', 'data-visit-id': v.visitId, 'data-status': v.status,
        href: '#/visit/' + encodeURIComponent(v.visitId), title: `${v.visitId}${who} · ${windowText(c)} · ${LABELS[v.status] || v.status}${km}` },
      h('span', { class: 'tl-label' }, `${clock(v.arrivalWindow.start)} ${LABELS[v.status] || v.status}${km}`),
      kinds.length ? h('span', { class: 'tl-exceptions' }, badges({ visitId: v.visitId }, kinds)) : null);
      // At least 1.25rem wide, and never past the track's end: a visit late in the day (or one whose window runs
      // past midnight) ends at the edge instead of reaching beyond it.
      const width = `max(1.25rem, calc(${pct(Math.max(v.arrivalWindow.end, v.arrivalWindow.start + 600))} - ${pct(v.arrivalWindow.start)}))`;
      block.style.width = width;
      block.style.left = `min(${pct(v.arrivalWindow.start)}, calc(100% - ${width}))`;
      block.style.top = `calc(${laneOf[i]} * var(--lane))`;
      track.append(block);
    });
    return h('div', { class: 'tl-row', testid: 'timeline-row', 'data-technician-id': t.id },
      h('div', { class: 'tl-who' },
        h('a', { href: `#/technician/${encodeURIComponent(t.id)}?date=${day}`, testid: 'timeline-technician' }, t.name),
        h('div', { class: 'muted small' }, t.vanDescription)),
      track);
  }).filter(Boolean);

  replace(box,
    h('div', { class: 'tl-head' }, h('div', { class: 'tl-who' }), h('div', { class: 'tl-axis-wrap' }, axis)),
    rows.length ? rows : h('p', { class: 'muted empty', testid: 'timeline-empty' },
      technicians.length ? 'No visit on this day matches the search.' : 'No technician has a visit on this day.'));
}
