// The visits board: the caller's visits (newest scheduled first), filters, booking, the legal events of each visit,
// and the exception of a visit no customer device shows. An idle board costs one GET /v1/visits every 2 seconds,
// plus a ledger read for an active visit with no live activity, at most every 30 s each (ledger.js).
import { api, explain, session } from './api.js';
import { h, replace, clock } from './dom.js';
import { LABELS, STATUSES, isEnded } from './transitions.js';
import { eventButtons } from './visit.js';
import { followWatch } from './ledger.js';

const POLL_MS = 2000;
const PAGE = 100;

export function showBoard(view) {
  let stopped = false;
  let timer = null;
  let pages = 1;
  const rows = new Map(); // visitId → { json, tr }
  const filters = { status: '', technicianId: '', customerId: '' };
  // Dispatchers and ops may read ledgers; a technician's board has no unfollowed mark.
  const follows = session.role === 'dispatcher' || session.role === 'ops'
    ? followWatch((visitId) => { const entry = rows.get(visitId); if (entry) drawExceptions(entry.tr, visitId); })
    : null;

  const message = h('p', { class: 'error', role: 'alert' });
  const tbody = h('tbody');
  const more = h('button', { type: 'button', class: 'secondary', hidden: true, onclick: () => { pages += 1; refresh(); } }, 'Show more');
  const count = h('span', { class: 'muted' });

  const statusSelect = h('select', { name: 'status', onchange: () => { filters.status = statusSelect.value; rows.clear(); replace(tbody); refresh(); } },
    h('option', { value: '' }, 'Any status'), h('option', { value: 'active' }, 'Active'), h('option', { value: 'ended' }, 'Ended'),
    STATUSES.map((s) => h('option', { value: s }, LABELS[s])));
  const textFilter = (name, label) => {
    const input = h('input', { name, placeholder: label, 'aria-label': label, type: 'search' });
    input.addEventListener('change', () => { filters[name] = input.value.trim(); rows.clear(); replace(tbody); refresh(); });
    return input;
  };

  const bookButton = h('button', { type: 'button', testid: 'book', onclick: () => openBooking() }, 'Book a visit');
  if (session.role !== 'dispatcher') bookButton.hidden = true;
  const bookArea = h('div');

  replace(view,
    h('section', { class: 'board', testid: 'board' },
      h('div', { class: 'toolbar' },
        h('h1', {}, 'Visits'), count,
        h('div', { class: 'filters' }, statusSelect, textFilter('technicianId', 'Technician id'), textFilter('customerId', 'Customer id')),
        bookButton),
      bookArea, message,
      h('div', { class: 'table-wrap' },
        h('table', {},
          h('thead', {}, h('tr', {}, ['Visit', 'Status', 'Customer', 'Technician', 'Job', 'Arrival', 'Events'].map((t) => h('th', { scope: 'col' }, t)))),
          tbody)),
      more));

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
    more.hidden = !cursor;
    return visits;
  }

  function render(visits) {
    const shown = filters.status && !['active', 'ended'].includes(filters.status)
      ? visits.filter((v) => v.status === filters.status) : visits;
    if (follows) follows.update(shown);
    const seen = new Set();
    let previous = null;
    for (const v of shown) {
      seen.add(v.visitId);
      const json = JSON.stringify(v);
      let entry = rows.get(v.visitId);
      if (!entry || entry.json !== json) {
        const tr = row(v);
        drawExceptions(tr, v.visitId);
        if (entry) entry.tr.replaceWith(tr);
        entry = { json, tr };
        rows.set(v.visitId, entry);
      }
      const want = previous ? previous.nextSibling : tbody.firstChild;
      if (want !== entry.tr) tbody.insertBefore(entry.tr, want);
      previous = entry.tr;
    }
    for (const [id, entry] of rows) if (!seen.has(id)) { entry.tr.remove(); rows.delete(id); }
    count.textContent = `${shown.length} shown`;
  }

  /** The exception badges of a visit's row (contract §11's `exception`); today only `unfollowed`. The box says
   * whether the visit's devices are known yet (`data-followed`), so a reader can tell "not marked" from "not
   * read yet". */
  function drawExceptions(tr, visitId) {
    const mark = follows ? follows.mark(visitId) : null;
    const box = tr.querySelector('.exceptions');
    if (mark) box.dataset.followed = mark === 'followed' ? 'yes' : 'no'; else delete box.dataset.followed;
    replace(box, mark === 'unfollowed'
      ? h('span', { class: 'exception unfollowed', testid: 'exception', 'data-kind': 'unfollowed',
        title: 'Active, and no customer device shows it: every Live Activity lapsed, was dismissed or ended, or there is none.' },
      'Customer sees nothing')
      : null);
  }

  function row(v) {
    const a = v.attributes || {};
    const c = v.contentState || {};
    const link = h('a', { href: '#/visit/' + encodeURIComponent(v.visitId) }, v.visitId);
    const events = eventButtons(v, () => refresh(), (text) => { message.textContent = text; delete message.dataset.kind; });
    return h('tr', { testid: 'visit-row', 'data-visit-id': v.visitId },
      h('td', {}, link),
      h('td', {}, h('span', { class: 'status ' + v.status, testid: 'visit-status' }, LABELS[v.status] || v.status),
        h('div', { class: 'exceptions' })),
      h('td', {}, a.customerFirstName ?? '(erased)', h('div', { class: 'muted small' }, v.customerId)),
      h('td', {}, h('a', { href: '#/technician-of/' + encodeURIComponent(v.visitId), testid: 'technician-link' }, c.technicianName || '(no name)')),
      h('td', {}, a.jobSummary ?? '', h('div', { class: 'muted small' }, a.serviceAddress ?? '')),
      h('td', { class: 'nowrap' }, c.arrivalStartEpoch ? `${clock(c.arrivalStartEpoch)}–${clock(c.arrivalEndEpoch)}` : ''),
      h('td', { class: 'events' }, events));
  }

  function openBooking() {
    if (bookArea.firstChild) { replace(bookArea); return; }
    replace(bookArea, bookingForm(() => { replace(bookArea); refresh(); }));
    bookArea.querySelector('input').focus();
  }

  // Fixed rate: the next request starts 2 s after this one started (never sooner), so a change shows
  // within 2 s plus one request.
  async function refresh() {
    clearTimeout(timer);
    const began = Date.now();
    try {
      const visits = await load();
      if (stopped) return;
      render(visits);
      if (message.dataset.kind === 'poll') { message.textContent = ''; delete message.dataset.kind; }
    } catch (e) {
      if (stopped) return;
      message.textContent = explain(e);
      message.dataset.kind = 'poll';
    }
    if (!stopped) timer = setTimeout(refresh, Math.max(0, POLL_MS - (Date.now() - began)));
  }

  refresh();
  return { stop() { stopped = true; clearTimeout(timer); if (follows) follows.stop(); } };
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
