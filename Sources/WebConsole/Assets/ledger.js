// A visit's Live Activity ledger (GET /v1/visits/{id}/live-activities): what each customer device shows. The
// visit's page draws it; the board reads it for its "unfollowed" exception (an active visit no device shows).
import { api, backgroundSlot } from './api.js';
import { h, replace, moment } from './dom.js';
import { isEnded } from './transitions.js';

/** The states in which a device shows the visit, or is about to (a start on its way); the others are retired. */
const SHOWING = ['starting', 'active', 'stale'];

const STATE_WORDS = {
  starting: 'Starting: a start is on its way',
  active: 'Showing',
  stale: 'Showing, out of date',
  ended: 'Ended',
  dismissed: 'Dismissed by the customer',
  lapsed: 'Lapsed: not renewed in time',
  renewed: 'Renewed: its renewal took over',
  replaced: 'Replaced by a newer one on the device',
};

const ORIGIN_WORDS = { app: 'Started in the app', pushToStart: 'Started by a push', renewal: 'A renewal' };

export function ledgerPath(visitId) {
  return `/v1/visits/${encodeURIComponent(visitId)}/live-activities`;
}

/** True when no device shows the visit: every entry retired (lapsed, dismissed, ended, …), or none at all. */
export function showsNothing(entries) {
  return !entries.some((e) => SHOWING.includes(e.state));
}

function fact(label, value) {
  return h('div', {}, h('dt', {}, label), h('dd', {}, value));
}

function entry(e) {
  const renewal = [];
  if (e.renewsAt !== null && e.renewsAt !== undefined) renewal.push(fact('Renews', moment(e.renewsAt)));
  if (e.lapsesAt !== null && e.lapsesAt !== undefined) {
    renewal.push(fact(renewal.length ? 'Lapses unless renewed' : 'Lapses', moment(e.lapsesAt)));
  }
  if (!renewal.length) renewal.push(fact('Renews or lapses', SHOWING.includes(e.state) ? '—' : 'No longer: retired'));
  const left = e.priority10LeftThisHour;
  return h('li', { class: 'ledger-entry', testid: 'ledger-entry', 'data-state': e.state, 'data-activity-id': e.activityId },
    h('div', { class: 'ledger-head' },
      h('strong', { class: 'ledger-device', testid: 'ledger-device' }, e.deviceId ?? 'unknown device'),
      h('span', { class: 'ledger-state', testid: 'ledger-state' }, STATE_WORDS[e.state] || e.state)),
    h('dl', { class: 'ledger-facts' },
      fact('Origin', ORIGIN_WORDS[e.origin] || e.origin),
      fact('Began', e.beganAt === null || e.beganAt === undefined ? (e.state === 'starting' ? 'Not yet' : '—') : moment(e.beganAt)),
      renewal,
      fact('Priority-10 pushes left this hour', left === null || left === undefined ? '—' : String(left)),
      fact('Last update acknowledged', moment(e.lastAcknowledgedAt)),
      e.activityId ? fact('Activity', e.activityId) : null,
      e.environment ? fact('Environment', e.environment) : null));
}

/** Draws the ledger's entries (newest first, as the API orders them) into a list. */
export function drawLedger(list, entries) {
  replace(list, entries.length === 0
    ? h('li', { class: 'muted' }, 'No device has this visit: no Live Activity registered and no start sent.')
    : entries.map(entry));
}

const RECHECK_MS = 30_000;
const PARALLEL = 4;

/**
 * Which of the board's visits no device shows. A visit with a live activity (its `liveActivities` count:
 * active or stale) is shown somewhere and costs nothing; an ended visit is never marked; only an active visit
 * with no live activity has its ledger read (a start may be on its way to a device), once per version of the
 * visit and again every 30 s, at most four at a time. `mark(visitId)` is `followed`, `unfollowed`, or null
 * (ended, or its ledger not read yet); `onChange(visitId)` is called when a reading changes a visit's mark
 * (a change of the visit itself changes its row, which asks again). Reads wait for api.js backgroundSlot: ten a
 * second at most with the board's other background reads.
 */
export function followWatch(onChange) {
  const known = new Map(); // visitId → { version, at, unfollowed }: the last reading of its ledger
  const latest = new Map(); // visitId → the visit as the board last listed it
  const queue = new Set(); // visitIds waiting for a reading, in order
  const reading = new Set(); // visitIds whose ledger is being read
  let stopped = false;

  const needsLedger = (v) => !isEnded(v.status) && !(v.liveActivities > 0);

  function mark(visitId) {
    const v = latest.get(visitId);
    if (!v || isEnded(v.status)) return null;
    if (!needsLedger(v)) return 'followed';
    const k = known.get(visitId);
    return k ? (k.unfollowed ? 'unfollowed' : 'followed') : null;
  }

  /** Takes the board's latest list of visits (before it draws their rows). */
  function update(visits) {
    const now = Date.now();
    latest.clear();
    for (const v of visits) latest.set(v.visitId, v);
    for (const id of [...known.keys()]) {
      const v = latest.get(id);
      if (!v || !needsLedger(v)) known.delete(id);
    }
    for (const v of visits) {
      if (!needsLedger(v)) continue;
      const k = known.get(v.visitId);
      if (k && k.version === v.version && now - k.at < RECHECK_MS) continue;
      if (!reading.has(v.visitId)) queue.add(v.visitId);
    }
    pump();
  }

  function pump() {
    while (!stopped && reading.size < PARALLEL && queue.size) {
      const id = queue.values().next().value;
      queue.delete(id);
      const v = latest.get(id);
      if (!v || !needsLedger(v)) continue;
      reading.add(id);
      check(v).finally(() => { reading.delete(id); pump(); });
    }
  }

  async function check(v) {
    let unfollowed;
    try {
      await backgroundSlot();
      if (stopped) return;
      const { liveActivities } = await api('GET', ledgerPath(v.visitId));
      unfollowed = showsNothing(liveActivities);
    } catch (e) {
      // Gone or not readable: no mark. Anything else keeps the last mark and is asked again in 30 s.
      unfollowed = e.status === 404 || e.status === 403 ? false : known.get(v.visitId)?.unfollowed === true;
    }
    const now = latest.get(v.visitId);
    if (stopped || !now || !needsLedger(now)) return; // gone, ended, or a live activity came meanwhile
    const before = mark(v.visitId);
    known.set(v.visitId, { version: v.version, at: Date.now(), unfollowed });
    if (mark(v.visitId) !== before) onChange(v.visitId);
  }

  return { update, mark, stop() { stopped = true; queue.clear(); } };
}
