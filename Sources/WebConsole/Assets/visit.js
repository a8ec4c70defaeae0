// A visit's page: its events offered, history, Live Activity as the customer sees it beside the ledger of what
// each customer device shows, and its deliveries.
import { api, explain, session } from './api.js';
import { h, replace, when, ask, dialog, busy, kilometres, distanceProblem, windowText } from './dom.js';
import { ACTIONS, ALERTS, LABELS, legalEvents } from './transitions.js';
import { drawActivity } from './activity.js';
import { drawLedger, ledgerPath } from './ledger.js';
import { technicianChoices } from './timeline.js';

const POLL_MS = 2000;

/**
 * Posts one event to a visit, asking first for what it needs: a reason, a technician, a distance ("En route",
 * "Nearby" and "Progress" ask for it, filled with the current one), and, for an event whose push alerts the
 * customer's phone, a confirmation naming that alert (`confirm`). False when the person cancelled.
 */
export async function postEvent(visit, type) {
  const body = { type };
  const c = visit.contentState || {};
  const distanceField = { name: 'kilometresAway', label: 'Distance (km)', inputmode: 'decimal', testid: 'distance',
    value: c.kilometresAway === undefined ? '' : String(c.kilometresAway), hint: 'How far the technician is from the customer now.' };
  const withDistance = (v) => { body.kilometresAway = kilometres(v.kilometresAway); };
  const alert = ALERTS[type];
  if (alert) {
    const fields = type === 'nearby' ? [distanceField] : [];
    const v = await dialog({
      title: `${LABELS[type]}: the customer's phone will alert`, testid: 'confirm', ok: `Send "${LABELS[type]}"`,
      lines: [`Posting "${LABELS[type]}" for ${visit.attributes?.customerFirstName ?? 'the customer'} (${visit.visitId}) sounds an alert on their phone:`,
        h('blockquote', { class: 'alert-text', testid: 'confirm-alert' }, h('strong', {}, alert.title), h('br'), alert.body)],
      fields, validate: (values) => (fields.length ? distanceProblem(values.kilometresAway) : null),
    });
    if (!v) return false;
    if (fields.length) withDistance(v);
  } else if (type === 'enRoute' || type === 'progress') {
    const v = await ask(type === 'enRoute' ? 'En route: how far away?' : 'Progress: the new distance', [distanceField],
      { validate: (values) => distanceProblem(values.kilometresAway) });
    if (!v) return false;
    withDistance(v);
  } else if (type === 'cancelled' || type === 'failed') {
    const v = await ask(type === 'cancelled' ? 'Cancel the visit' : 'Mark the visit failed',
      [{ name: 'reason', label: 'Reason', required: type === 'failed' }]);
    if (!v) return false;
    if (v.reason) body.reason = v.reason;
  } else if (type === 'reassigned') {
    const v = await reassignDialog(visit);
    if (!v) return false;
    body.technician = v;
  }
  await api('POST', `/v1/visits/${encodeURIComponent(visit.visitId)}/events`, body);
  return true;
}

/** Asks for the new technician of a visit, offering the known technicians (their name, avatar and van filled in
 * from the choice); the van is the new technician's, never the previous one's. */
async function reassignDialog(visit) {
  const c = visit.contentState || {};
  const list = await technicianChoices();
  const pick = list.length ? [{ name: 'pick', label: 'Technician', required: false, testid: 'pick-technician',
    options: [{ value: '', label: 'Someone else (type below)' }, ...list.map((t) => ({ value: t.id, label: `${t.name} (${t.id}) · ${t.vanDescription}` }))],
    onchange: (value, inputs) => {
      const t = list.find((x) => x.id === value);
      const set = (name, v) => { const input = inputs.find((i) => i.name === name); if (input) input.value = v; };
      set('id', t ? t.id : ''); set('name', t ? t.name : ''); set('avatarSymbol', t ? t.avatarSymbol : 'person.crop.circle');
      set('vanDescription', t ? t.vanDescription : '');
    } }] : [];
  const v = await ask('Reassign to', [...pick,
    { name: 'id', label: 'Technician id' }, { name: 'name', label: 'Name' },
    { name: 'avatarSymbol', label: 'Avatar symbol', value: c.avatarSymbol || 'person.crop.circle' },
    { name: 'vanDescription', label: 'Van', value: '', hint: "The new technician's van, as the customer will see it." }]);
  if (!v) return null;
  delete v.pick;
  return v;
}

/** The event buttons of a visit for this caller; a click disables all of them until its request has answered. */
export function eventButtons(visit, onPosted, onError) {
  const buttons = legalEvents(visit.status, session.role).map((type) =>
    h('button', { type: 'button', class: 'event ' + type, testid: 'event-' + type, onclick: () => act(type) }, ACTIONS[type]));
  async function act(type) {
    onError('');
    try {
      if (await busy(buttons, () => postEvent(visit, type))) onPosted();
    } catch (e) { onError(explain(e)); }
  }
  return buttons;
}

/** Who posted an event, as a person reads it: the key's display name when it has one, else its role and subject
 * (a technician's key named by the technician the visit had then). */
function actorText(actor, technicians) {
  if (!actor) return '';
  const role = actor.role || '';
  if (actor.name) return `${actor.name} (${role})`;
  if (role === 'technician' && technicians.has(actor.subject)) return `${technicians.get(actor.subject)} (technician ${actor.subject})`;
  return `${role}${actor.subject ? ' ' + actor.subject : ''}`;
}

/** What an event changed: distance, window (and by how much), technician from whom to whom, reason. */
function changeText(e, before) {
  const d = e.data || {};
  const parts = [];
  const who = (t) => `${t.name} (${t.id})`;
  if (e.type === 'scheduled' && d.technician) parts.push(`Technician ${who(d.technician)}, ${d.technician.vanDescription}`);
  if (e.type === 'reassigned' && d.technician) {
    parts.push(before.technician ? `From ${who(before.technician)} to ${who(d.technician)}` : `To ${who(d.technician)}`);
    parts.push(`van: ${d.technician.vanDescription}`);
  }
  if (typeof d.kilometresAway === 'number') parts.push(`${d.kilometresAway.toFixed(1)} km away`);
  if (d.arrivalWindow) {
    const w = windowText({ arrivalStartEpoch: d.arrivalWindow.start, arrivalEndEpoch: d.arrivalWindow.end });
    const moved = before.window ? Math.round((d.arrivalWindow.start - before.window.start) / 60) : 0;
    parts.push(e.type === 'scheduled' || !moved ? `Arrival ${w}` : `Arrival moved ${Math.abs(moved)} min ${moved > 0 ? 'later' : 'earlier'}: ${w}`);
  }
  if (d.reason) parts.push(`Reason: ${d.reason}`);
  return parts.join(' · ');
}

/** The history's entries, oldest first, each saying who did what and what it changed. */
function historyEntries(events) {
  const state = { technician: null, window: null };
  const technicians = new Map();
  return events.map((e) => {
    const d = e.data || {};
    const change = changeText(e, state);
    const actor = actorText(e.actor, technicians);
    if (d.technician) { state.technician = d.technician; technicians.set(d.technician.id, d.technician.name); }
    if (d.arrivalWindow) state.window = d.arrivalWindow;
    return h('li', { 'data-type': e.type, testid: 'history-entry' },
      h('strong', {}, e.type === 'reassigned' ? 'Reassigned' : LABELS[e.type] || e.type), ' ',
      h('span', { class: 'muted', testid: 'history-actor' }, `v${e.version} · ${when(e.recordedAt)} · ${actor}`),
      change ? h('div', { testid: 'history-change' }, change) : null);
  });
}

/**
 * The visit's tracking link, for a customer without the app: made (or replaced: a visit has one link, and a new
 * one stops the old URL) and revoked here. The server keeps only the token's hash, so the URL is shown once,
 * when it is made, to be copied into a message to the customer.
 */
function trackingLinkCard(path) {
  const out = h('p', { class: 'muted', testid: 'tracking-link-result' });
  const url = h('input', { type: 'text', readOnly: true, class: 'tracking-url', testid: 'tracking-link-url', 'aria-label': 'Tracking link', hidden: true });
  const make = h('button', { type: 'button', testid: 'tracking-link-create', onclick: () => create() }, 'Make a tracking link');
  const revoke = h('button', { type: 'button', testid: 'tracking-link-revoke', onclick: () => remove() }, 'Revoke the link');
  async function create() {
    const ok = await dialog({ title: 'Make a tracking link?', testid: 'confirm', ok: 'Make the link',
      lines: ['A page anyone with the link can open, showing what the Lock Screen shows: technician, van, arrival window, status, distance and job — never the address or the customer\'s name. A link made before stops working.'] });
    if (!ok) return;
    await busy([make, revoke], async () => {
      try {
        const r = await api('POST', path + '/tracking-link');
        url.value = new URL(r.url, location.origin).href;
        url.hidden = false;
        out.textContent = 'Copy it into a message to the customer: it is shown only now. It stops working an hour after the visit ends.';
      } catch (e) { out.textContent = explain(e); }
    });
  }
  async function remove() {
    const ok = await dialog({ title: 'Revoke the tracking link?', testid: 'confirm', ok: 'Revoke',
      lines: ['The customer\'s page stops updating and says the link is no longer valid.'] });
    if (!ok) return;
    await busy([make, revoke], async () => {
      try {
        await api('DELETE', path + '/tracking-link');
        url.value = ''; url.hidden = true;
        out.textContent = 'Revoked.';
      } catch (e) { out.textContent = explain(e); }
    });
  }
  return h('section', { class: 'card', testid: 'tracking-link' }, h('h2', {}, 'Tracking link'),
    h('p', { class: 'muted small' }, 'For a customer without the app: a live page with the Lock Screen card.'),
    h('div', { class: 'toolbar' }, make, revoke), url, out);
}

export function showVisit(view, visitId) {
  let stopped = false;
  let timer = null;
  let visit = null;
  let version = -1;
  let lastDeliveries = '';
  let deliveryList = null; // the visit's deliveries as last read: what the phone acknowledged, what is held back
  let ledgerList = null; // the visit's Live Activities as last read
  let lastFollowed = ''; // the visit's count of live activities and channels when last read
  const path = `/v1/visits/${encodeURIComponent(visitId)}`;
  const mayReadDeliveries = session.role === 'dispatcher' || session.role === 'ops';

  const message = h('p', { class: 'error', role: 'alert' });
  const title = h('h1', {}, visitId);
  const status = h('span', { class: 'status' });
  const events = h('div', { class: 'events' });
  const who = h('p', { class: 'muted' });
  const preview = h('div', { class: 'activity' });
  const ledger = h('ul', { class: 'ledger', testid: 'ledger' });
  const history = h('ol', { class: 'history', testid: 'history' });
  const deliveries = h('tbody');
  const trackingCard = mayReadDeliveries ? trackingLinkCard(path) : null;

  replace(view,
    h('p', {}, h('a', { href: '#/board' }, '← Board')),
    h('div', { class: 'toolbar' }, title, status, events),
    who, message,
    h('div', { class: 'visit-grid' },
      h('section', { class: 'card' }, h('h2', {}, 'Live Activity'),
        h('div', { class: 'activity-and-ledger' }, preview,
          mayReadDeliveries ? h('div', { class: 'ledger-panel' }, h('h3', {}, "On the customer's devices"), ledger) : null)),
      h('section', { class: 'card' }, h('h2', {}, 'History'), history)),
    trackingCard,
    mayReadDeliveries ? h('section', { class: 'card' }, h('h2', {}, 'Deliveries'),
      h('div', { class: 'table-wrap' }, h('table', { testid: 'deliveries' },
        h('thead', {}, h('tr', {}, ['Id', 'Kind', 'Target', 'Priority', 'State', 'Attempts', 'Last answer', 'Created', 'Sent'].map((t) => h('th', { scope: 'col' }, t)))),
        deliveries))) : null);

  function drawVisit() {
    status.className = 'status ' + visit.status;
    status.textContent = LABELS[visit.status] || visit.status;
    status.dataset.testid = 'visit-status';
    replace(events, eventButtons(visit, () => refresh(), (text) => { message.textContent = text; delete message.dataset.kind; }));
    drawSummary();
    drawActivity(preview, visit, deliveryList, ledgerList);
  }

  // Also between versions: the count of live activities moves with the app's registrations and reports.
  function drawSummary() {
    const a = visit.attributes || {};
    const c = visit.contentState || {};
    who.textContent = `For ${a.customerFirstName ?? '(erased)'} (${visit.customerId}) · ${a.jobSummary ?? ''} at ${a.serviceAddress ?? ''}` +
      ` · technician ${c.technicianName || ''} · version ${visit.version} · ${visit.liveActivities ?? 0} Live Activit${visit.liveActivities === 1 ? 'y' : 'ies'}`
      + (visit.channels && visit.channels.length ? ` · broadcast channel: ${visit.channels.map((ch) => ch.environment).join(', ')}` : '');
  }

  async function refreshHistory() {
    const { events: list } = await api('GET', path + '/events');
    replace(history, historyEntries(list).reverse());
  }

  // Deliveries are read every cycle while one is still on its way (or the visit or its followers just
  // changed), else every fifth: a settled visit's pushes do not move.
  // True when the list changed.
  let settledCycles = 0;
  async function refreshDeliveries(changed) {
    if (!changed && settledCycles > 0 && settledCycles % 5 !== 0) { settledCycles += 1; return false; }
    const { deliveries: list } = await api('GET', path + '/deliveries');
    settledCycles = list.some((d) => d.state === 'pending' || d.state === 'sending') ? 0 : settledCycles + 1;
    const json = JSON.stringify(list);
    if (json === lastDeliveries) return false;
    lastDeliveries = json;
    deliveryList = list;
    drawActivity(preview, visit, deliveryList, ledgerList);
    replace(deliveries, list.length === 0 ? h('tr', {}, h('td', { colSpan: 9, class: 'muted' }, 'No pushes yet.')) :
      list.map((d) => h('tr', { testid: 'delivery', 'data-kind': d.kind, 'data-state': d.state },
        h('td', {}, String(d.id)), h('td', {}, d.kind), h('td', {}, d.target), h('td', {}, String(d.priority)),
        h('td', {}, h('span', { class: 'state ' + d.state }, d.state)), h('td', {}, String(d.attempts)),
        h('td', {}, d.lastStatus === null ? '—' : `${d.lastStatus}${d.lastReason ? ' ' + d.lastReason : ''}`),
        h('td', {}, when(d.createdAt)), h('td', {}, when(d.sentAt)))));
    return true;
  }

  // The ledger is read when the visit or its count of live activities changed (a report, a registration, a
  // retirement changes the count) or its deliveries did (an acknowledgement moves an activity's last
  // timestamp, which the preview compares), else every fifth cycle: a start's expiry or a lapse changes
  // nothing else.
  let ledgerCycles = 0;
  let ledgerKey = '';
  async function refreshLedger(deliveriesMoved) {
    const key = `${visit.version}/${visit.liveActivities}`;
    if (!deliveriesMoved && key === ledgerKey && ledgerCycles % 5 !== 0) { ledgerCycles += 1; return; }
    const { liveActivities: list } = await api('GET', ledgerPath(visitId));
    if (stopped) return;
    ledgerKey = key;
    ledgerCycles = 1;
    ledgerList = list;
    drawLedger(ledger, list);
    drawActivity(preview, visit, deliveryList, ledgerList);
  }

  async function refresh() {
    clearTimeout(timer);
    try {
      visit = await api('GET', path);
      if (stopped) return;
      const changed = visit.version !== version;
      if (changed) {
        version = visit.version;
        drawVisit();
        await refreshHistory();
      } else {
        drawSummary();
        drawActivity(preview, visit, deliveryList, ledgerList); // the countdown and the stale date move with the clock
      }
      // A registration (or a retirement) changes the count, not the version, and brings its own pushes.
      const followed = `${visit.liveActivities}/${(visit.channels || []).length}`;
      const followersChanged = followed !== lastFollowed;
      lastFollowed = followed;
      // The ledger after the deliveries: never older than the acknowledgements the preview draws.
      if (mayReadDeliveries) await refreshLedger(await refreshDeliveries(changed || followersChanged));
      if (message.dataset.kind === 'poll') { message.textContent = ''; delete message.dataset.kind; }
    } catch (e) {
      if (stopped) return;
      message.textContent = e.status === 404 ? 'No such visit (or not yours).' : explain(e);
      message.dataset.kind = 'poll';
    }
    if (!stopped) timer = setTimeout(refresh, POLL_MS);
  }

  refresh();
  return { stop() { stopped = true; clearTimeout(timer); } };
}
