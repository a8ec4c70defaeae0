// The visits board: the caller's visits in order of arrival window, a search and filters kept in the URL, booking,
// the legal events of each visit, and each visit's exceptions (exceptions.js). An idle board costs one
// GET /v1/visits every 2 seconds, plus a ledger read for an active visit with no live activity, at most every
// 30 s each (ledger.js), and the deliveries reads deliveryWatch describes (none for a settled visit).
import { api, explain, session } from './api.js';
import { h, replace, windowText } from './dom.js';
import { LABELS, STATUSES, isEnded } from './transitions.js';
import { eventButtons } from './visit.js';
import { followWatch } from './ledger.js';
import { deliveryWatch, drawBadges, exceptionsOf } from './exceptions.js';
import { drawTimeline, techniciansOn, technicianChoices } from './timeline.js';
import { isoDay, stepDay, dayStart } from './technician.js';

const POLL_MS = 2000;
const PAGE = 100;

/** The board's filters, as they stand in its URL (#/board?q=…&status=…): a link or a reload keeps them. */
const FILTERS = ['q', 'status', 'technicianId', 'customerId', 'exceptions', 'view', 'date'];

/** True when the visit matches every word of the search: technician name, customer first name, job summary or an
 * id, partially and whatever the case. */
export function matches(v, q) {
  if (!q) return true;
  const a = v.attributes || {};
  const c = v.contentState || {};
  const hay = [c.technicianName, a.customerFirstName, a.jobSummary, v.visitId, v.customerId]
    .filter(Boolean).join('\n').toLowerCase();
  return q.toLowerCase().split(/\s+/).filter(Boolean).every((word) => hay.includes(word));
}

/** The list's order: by arrival window start, then end, then id. */
export function byArrival(a, b) {
  const ca = a.contentState || {}, cb = b.contentState || {};
  return (ca.arrivalStartEpoch ?? 0) - (cb.arrivalStartEpoch ?? 0) || (ca.arrivalEndEpoch ?? 0) - (cb.arrivalEndEpoch ?? 0)
    || (a.visitId < b.visitId ? -1 : a.visitId > b.visitId ? 1 : 0);
}

export function showBoard(view, params = new URLSearchParams()) {
  let stopped = false;
  let timer = null;
  let pages = 1;
  let latest = []; // the visits of the last load
  let moreToLoad = false;
  let technicians = null; // the timeline's day, when it is shown
  let drawnTimeline = '';
  let hovered = null; // the row under the pointer: it keeps its place on screen when rows come and go
  const rows = new Map(); // visitId → { json, tr }
  const filters = Object.fromEntries(FILTERS.map((k) => [k, params.get(k) || '']));
  const readsPushes = session.role === 'dispatcher' || session.role === 'ops';
  // A new mark redraws its row at once; the timeline takes new marks with its next poll (within 2 s), so a
  // stream of readings never redraws thousands of blocks many times a second.
  const redraw = (visitId) => (filters.view === 'timeline' ? null : keepingHovered(() => {
    const entry = rows.get(visitId);
    if (entry) { drawExceptions(entry.tr, latest.find((v) => v.visitId === visitId)); countExceptions(); }
  }));
  // Dispatchers and ops may read ledgers and deliveries; a technician's board has no unfollowed or delivery mark.
  const follows = readsPushes ? followWatch(redraw) : null;
  const deliveries = readsPushes ? deliveryWatch(redraw) : null;

  const message = h('p', { class: 'error', role: 'alert' });
  const tbody = h('tbody');
  const empty = h('p', { class: 'empty muted', testid: 'empty', hidden: true });
  const more = h('button', { type: 'button', class: 'secondary', hidden: true, onclick: () => { pages += 1; refresh(); } }, 'Show more');
  const count = h('span', { class: 'muted', testid: 'shown-count' });
  const counter = document.getElementById('exceptions-count');

  function setFilter(name, value) {
    filters[name] = value;
    const p = new URLSearchParams();
    for (const k of FILTERS) if (filters[k]) p.set(k, filters[k]);
    const hash = '#/board' + (p.toString() ? '?' + p.toString() : '');
    if (location.hash !== hash) history.replaceState(null, '', hash);
  }
  const reload = () => { rows.clear(); replace(tbody); refresh(); };

  const statusSelect = h('select', { name: 'status', 'aria-label': 'Status', onchange: () => { setFilter('status', statusSelect.value); reload(); } },
    h('option', { value: '' }, 'Any status'), h('option', { value: 'active' }, 'Active'), h('option', { value: 'ended' }, 'Ended'),
    STATUSES.map((s) => h('option', { value: s }, LABELS[s])));
  statusSelect.value = filters.status;
  const textFilter = (name, label) => {
    const input = h('input', { name, placeholder: label, 'aria-label': label, type: 'search', value: filters[name] });
    input.addEventListener('change', () => { setFilter(name, input.value.trim()); reload(); });
    return input;
  };
  const search = h('input', { type: 'search', name: 'q', testid: 'search', value: filters.q, class: 'search',
    placeholder: 'Search technician, customer, job or id', 'aria-label': 'Search visits' });
  search.addEventListener('input', () => { setFilter('q', search.value.trim()); render(); });
  const onlyExceptions = h('label', { class: 'check' },
    h('input', { type: 'checkbox', name: 'exceptions', checked: filters.exceptions === '1', testid: 'only-exceptions',
      onchange: (e) => { setFilter('exceptions', e.target.checked ? '1' : ''); render(); } }), 'Only exceptions');

  const viewButton = (name, label) => h('button', { type: 'button', class: 'secondary', testid: 'view-' + name,
    'aria-pressed': String((filters.view || 'list') === name), onclick: () => { setFilter('view', name === 'list' ? '' : name); route(); } }, label);
  // Another view is another page: the app's router draws it afresh from the URL.
  const route = () => window.dispatchEvent(new HashChangeEvent('hashchange'));
  const timelineOn = filters.view === 'timeline';
  const day = isoDay(dayStart(filters.date));
  const goDay = (d) => { setFilter('date', d === isoDay(new Date()) ? '' : d); technicians = null; reload(); drawDay(); };
  const dayLabel = h('strong', { testid: 'timeline-day' });
  const daySteps = h('div', { class: 'row day-steps', hidden: !timelineOn },
    h('button', { type: 'button', class: 'secondary', testid: 'day-previous', onclick: () => goDay(stepDay(filters.date || isoDay(new Date()), -1)) }, '← Previous day'),
    dayLabel,
    h('button', { type: 'button', class: 'secondary', testid: 'day-next', onclick: () => goDay(stepDay(filters.date || isoDay(new Date()), 1)) }, 'Next day →'),
    h('button', { type: 'button', class: 'link', testid: 'day-today', onclick: () => goDay(isoDay(new Date())) }, 'Today'));
  function drawDay() {
    const d = isoDay(dayStart(filters.date));
    dayLabel.textContent = dayStart(d).toLocaleDateString([], { weekday: 'long', day: 'numeric', month: 'long' }) + (d === isoDay(new Date()) ? ' (today)' : '');
  }
  drawDay();
  const timeline = h('section', { class: 'timeline', testid: 'timeline', hidden: !timelineOn });
  const bookButton = h('button', { type: 'button', testid: 'book', onclick: () => openBooking() }, 'Book a visit');
  if (session.role !== 'dispatcher') bookButton.hidden = true;
  const bookArea = h('div');

  const list = h('div', { class: 'table-wrap' },
    h('table', { class: 'visits' },
      h('thead', {}, h('tr', {}, ['Visit', 'Status', 'Customer', 'Technician', 'Job', 'Arrival', 'Events'].map((t) => h('th', { scope: 'col' }, t)))),
      tbody));
  // The row under the pointer never moves on screen: when rows arrive, leave or reorder, the page scrolls by
  // as much as the row would have moved, so a click lands on what the eye aimed at.
  tbody.addEventListener('pointerover', (e) => { hovered = e.target.closest('tr'); });
  list.addEventListener('pointerleave', () => { hovered = null; });

  replace(view,
    h('section', { class: 'board', testid: 'board' },
      h('div', { class: 'toolbar' },
        h('h1', {}, 'Visits'), count, h('div', { class: 'row views' }, viewButton('list', 'List'), viewButton('timeline', 'Day by technician')),
        h('div', { class: 'filters' }, search, statusSelect, textFilter('technicianId', 'Technician id'), textFilter('customerId', 'Customer id'), onlyExceptions),
        bookButton),
      bookArea, message, daySteps, timeline, list, empty, more));
  if (timelineOn) { list.hidden = true; more.hidden = true; }

  function query(limit, cursor) {
    const p = new URLSearchParams({ limit: String(limit) });
    if (filters.status === 'active' || filters.status === 'ended') p.set('status', filters.status);
    else if (filters.status) p.set('status', isEnded(filters.status) ? 'ended' : 'active');
    if (filters.technicianId) p.set('technicianId', filters.technicianId);
    if (filters.customerId) p.set('customerId', filters.customerId);
    if (cursor) p.set('cursor', cursor);
    return '/v1/visits?' + p.toString();
  }

  async function load() {
    let visits = [];
    let cursor = null;
    for (let i = 0; i < pages; i++) {
      const page = await api('GET', query(PAGE, cursor));
      visits = visits.concat(page.visits);
      cursor = page.nextCursor;
      if (!cursor) break;
    }
    moreToLoad = Boolean(cursor);
    more.hidden = !cursor;
    return visits;
  }

  /** Runs a change of the list, then scrolls by as much as it moved the row under the pointer. */
  function keepingHovered(change) {
    const anchor = hovered && hovered.isConnected ? hovered : null;
    const anchorTop = anchor ? anchor.getBoundingClientRect().top : 0;
    change();
    const still = anchor && rows.get(anchor.dataset.visitId)?.tr;
    if (still && still.isConnected) {
      const moved = still.getBoundingClientRect().top - anchorTop;
      if (moved) window.scrollBy(0, moved);
    }
  }

  function render() {
    if (filters.view === 'timeline') renderTimeline(); else keepingHovered(renderRows);
  }

  /** The timeline narrowed like the rows: by the search (on the board's loaded visit, else on the technician's
   * name and the visit id) and by "only exceptions". */
  function renderTimeline() {
    if (!technicians) return;
    const byId = new Map(latest.map((v) => [v.visitId, v]));
    const kindsOf = (visitId) => exceptionsOf(byId.get(visitId), follows, deliveries);
    const keep = (t, v) => {
      const loaded = byId.get(v.visitId);
      const hit = loaded ? matches(loaded, filters.q)
        : matches({ visitId: v.visitId, contentState: { technicianName: t.name } }, filters.q);
      const flagged = filters.exceptions !== '1' || (loaded ? kindsOf(v.visitId).length > 0 : false);
      return hit && flagged;
    };
    // Drawn again only when something it shows changed (the now line moves by the minute).
    const key = JSON.stringify([technicians, filters.q, filters.exceptions, filters.date, Math.floor(Date.now() / 60_000),
      technicians.flatMap((t) => t.visits.map((v) => (byId.has(v.visitId) ? kindsOf(v.visitId) : [])))]);
    if (key !== drawnTimeline) {
      drawnTimeline = key;
      drawTimeline(timeline, technicians, isoDay(dayStart(filters.date)), { visitsById: byId, keep, kindsOf });
    }
    const n = technicians.reduce((sum, t) => sum + t.visits.filter((v) => keep(t, v)).length, 0);
    count.textContent = `${n} visit${n === 1 ? '' : 's'} on this day`;
    countExceptions();
  }

  function renderRows() {
    const byStatus = filters.status && !['active', 'ended'].includes(filters.status)
      ? latest.filter((v) => v.status === filters.status) : latest;
    const kinds = new Map(byStatus.map((v) => [v.visitId, exceptionsOf(v, follows, deliveries)]));
    const shown = byStatus
      .filter((v) => matches(v, filters.q) && (filters.exceptions !== '1' || kinds.get(v.visitId).length))
      .sort(byArrival);
    const seen = new Set();
    let previous = null;
    for (const v of shown) {
      seen.add(v.visitId);
      const json = JSON.stringify(v);
      let entry = rows.get(v.visitId);
      if (!entry || entry.json !== json) {
        const tr = row(v);
        if (entry) { entry.tr.replaceWith(tr); if (hovered === entry.tr) hovered = tr; }
        entry = { json, tr };
        rows.set(v.visitId, entry);
      }
      drawExceptions(entry.tr, v, kinds.get(v.visitId));
      const want = previous ? previous.nextSibling : tbody.firstChild;
      if (want !== entry.tr) tbody.insertBefore(entry.tr, want);
      previous = entry.tr;
    }
    for (const [id, entry] of rows) if (!seen.has(id)) { entry.tr.remove(); rows.delete(id); }
    count.textContent = shown.length === latest.length ? `${shown.length} shown` : `${shown.length} of ${latest.length} shown`;
    const narrowed = filters.q || filters.exceptions === '1' || filters.status || filters.technicianId || filters.customerId;
    empty.hidden = shown.length > 0;
    empty.textContent = !narrowed ? 'No visits yet.'
      : `No visit matches${filters.q ? ` "${filters.q}"` : ' these filters'}${moreToLoad ? ` among the ${latest.length} loaded (Show more loads older bookings)` : ''}.`;
    countExceptions(kinds);
  }

  /** The header's counter: visits of this board with at least one exception; a link to them alone. */
  function countExceptions(kinds) {
    if (!counter) return;
    const n = latest.filter((v) => (kinds ? kinds.get(v.visitId) : exceptionsOf(v, follows, deliveries))?.length).length;
    counter.hidden = false;
    counter.dataset.count = String(n);
    counter.textContent = `${n} exception${n === 1 ? '' : 's'}`;
  }

  /** A row's exception badges (contract §11's `exception`). The box says whether the visit's devices are known
   * yet (`data-followed`), so a reader can tell "not marked" from "not read yet". */
  function drawExceptions(tr, v, kinds) {
    if (!v) return;
    const mark = follows ? follows.mark(v.visitId) : null;
    const box = tr.querySelector('.exceptions');
    if (mark) box.dataset.followed = mark === 'followed' ? 'yes' : 'no'; else delete box.dataset.followed;
    drawBadges(box, v, kinds || exceptionsOf(v, follows, deliveries));
  }

  function row(v) {
    const a = v.attributes || {};
    const c = v.contentState || {};
    const link = h('a', { href: '#/visit/' + encodeURIComponent(v.visitId) }, v.visitId);
    const events = eventButtons(v, () => refresh(), (text) => { message.textContent = text; delete message.dataset.kind; });
    return h('tr', { testid: 'visit-row', 'data-visit-id': v.visitId },
      h('td', { 'data-label': 'Visit' }, link),
      h('td', { 'data-label': 'Status' }, h('span', { class: 'status ' + v.status, testid: 'visit-status' }, LABELS[v.status] || v.status),
        h('div', { class: 'exceptions' })),
      h('td', { 'data-label': 'Customer' }, a.customerFirstName ?? '(erased)', h('div', { class: 'muted small' }, v.customerId)),
      h('td', { 'data-label': 'Technician' }, h('a', { href: '#/technician-of/' + encodeURIComponent(v.visitId), testid: 'technician-link' }, c.technicianName || '(no name)')),
      h('td', { 'data-label': 'Job' }, a.jobSummary ?? '', h('div', { class: 'muted small' }, a.serviceAddress ?? '')),
      h('td', { 'data-label': 'Arrival', class: 'nowrap', testid: 'arrival' }, windowText(c),
        c.kilometresAway !== undefined && !isEnded(v.status) ? h('div', { class: 'muted small' }, `${Number(c.kilometresAway).toFixed(1)} km`) : null),
      h('td', { 'data-label': 'Events', class: 'events' }, events));
  }

  function openBooking() {
    if (bookArea.firstChild) { replace(bookArea); return; }
    replace(bookArea, bookingForm(() => { replace(bookArea); refresh(); }));
    technicianChoices().then((list) => offerTechnicians(bookArea, list));
    bookArea.querySelector('input').focus();
  }

  // Fixed rate: the next request starts 2 s after this one started (never sooner), so a change shows
  // within 2 s plus one request.
  async function refresh() {
    clearTimeout(timer);
    const began = Date.now();
    try {
      const [visits, day] = await Promise.all([load(), filters.view === 'timeline' ? techniciansOn(isoDay(dayStart(filters.date))) : null]);
      if (stopped) return;
      latest = visits;
      technicians = day;
      if (follows) follows.update(visits);
      if (deliveries) deliveries.update(visits);
      render();
      if (message.dataset.kind === 'poll') { message.textContent = ''; delete message.dataset.kind; }
    } catch (e) {
      if (stopped) return;
      message.textContent = explain(e);
      message.dataset.kind = 'poll';
    }
    if (!stopped) timer = setTimeout(refresh, Math.max(0, POLL_MS - (Date.now() - began)));
  }

  refresh();
  return {
    stop() {
      stopped = true; clearTimeout(timer);
      if (follows) follows.stop();
      if (deliveries) deliveries.stop();
      if (counter) counter.hidden = true;
    },
  };
}

/** Offers the known technicians in the booking form: picking one by id fills in their name, avatar and van. */
function offerTechnicians(area, list) {
  const form = area.querySelector('form.booking');
  if (!form || !list.length) return;
  const options = h('datalist', { id: 'technician-choices' }, list.map((t) => h('option', { value: t.id }, `${t.name} · ${t.vanDescription}`)));
  form.append(options);
  const id = form.elements['technician.id'];
  id.setAttribute('list', 'technician-choices');
  id.addEventListener('change', () => {
    const t = list.find((c) => c.id === id.value.trim());
    if (!t) return;
    form.elements['technician.name'].value = t.name;
    form.elements['technician.avatarSymbol'].value = t.avatarSymbol;
    form.elements['technician.vanDescription'].value = t.vanDescription;
  });
}

/** The booking form: its inputs are named like the fields of POST /v1/visits; the API's own errors are shown. */
function bookingForm(done) {
  const now = Math.floor(Date.now() / 1000);
  const local = (epoch) => { const d = new Date(epoch * 1000); d.setMinutes(d.getMinutes() - d.getTimezoneOffset()); return d.toISOString().slice(0, 16); };
  const field = (name, label, attrs = {}) => h('label', {}, label, h('input', { name, required: true, ...attrs }));
  const error = h('p', { class: 'error', role: 'alert', testid: 'book-error' });
  const form = h('form', { class: 'card booking', novalidate: false },
    h('h2', {}, 'Book a visit'),
    h('div', { class: 'grid' },
      field('visitId', 'Visit id (optional)', { required: false, maxLength: 128 }),
      field('customerId', 'Customer id', { maxLength: 128 }),
      field('attributes.customerFirstName', 'Customer first name', { maxLength: 64 }),
      field('attributes.serviceAddress', 'Service address', { maxLength: 512 }),
      field('attributes.jobSummary', 'Job summary', { maxLength: 512 }),
      field('technician.id', 'Technician id', { maxLength: 128 }),
      field('technician.name', 'Technician name', { maxLength: 64 }),
      field('technician.avatarSymbol', 'Avatar symbol', { value: 'person.crop.circle', maxLength: 64 }),
      field('technician.vanDescription', 'Van', { value: 'White van', maxLength: 512 }),
      field('arrivalWindow.start', 'Arrival from', { type: 'datetime-local', value: local(now + 1800) }),
      field('arrivalWindow.end', 'Arrival until', { type: 'datetime-local', value: local(now + 3600) }),
      field('kilometresAway', 'Kilometres away', { type: 'number', min: '0', step: '0.1', value: '14' })),
    error,
    h('div', { class: 'row' },
      h('button', { type: 'submit', testid: 'book-submit' }, 'Book'),
      h('button', { type: 'button', class: 'secondary', onclick: done }, 'Cancel')));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.textContent = '';
    const v = (name) => form.elements[name].value.trim();
    const epoch = (name) => Math.floor(new Date(v(name)).getTime() / 1000);
    const body = {
      customerId: v('customerId'),
      attributes: { customerFirstName: v('attributes.customerFirstName'), serviceAddress: v('attributes.serviceAddress'), jobSummary: v('attributes.jobSummary') },
      technician: { id: v('technician.id'), name: v('technician.name'), avatarSymbol: v('technician.avatarSymbol'), vanDescription: v('technician.vanDescription') },
      arrivalWindow: { start: epoch('arrivalWindow.start'), end: epoch('arrivalWindow.end') },
      kilometresAway: Number(v('kilometresAway') || 0),
    };
    if (v('visitId')) body.visitId = v('visitId');
    if (!(body.arrivalWindow.end >= body.arrivalWindow.start)) { error.textContent = 'The arrival window must end after it starts.'; return; }
    try {
      await api('POST', '/v1/visits', body);
      done();
    } catch (e) { error.textContent = explain(e); }
  });
  return form;
}
