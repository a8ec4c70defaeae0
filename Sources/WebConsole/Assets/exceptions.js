// A visit's exceptions on the board and the timeline (`exception` badges, data-kind late | stale | unfollowed |
// delivery) and what each asks of the dispatcher. `late` and `stale` come from the visit itself and the
// browser's clock; `unfollowed` from the ledger (ledger.js); `delivery` from the visit's deliveries, read as
// cheaply as deliveryWatch explains.
import { api, backgroundSlot } from './api.js';
import { h, replace } from './dom.js';
import { isEnded } from './transitions.js';

const STALE_GRACE = 300; // seconds past staleDate before a visit counts as stale
const PENDING_TOO_LONG = 60; // seconds a push may wait before it counts as stuck
const ON_THE_WAY = ['scheduled', 'enRoute', 'nearby'];

/** The window has ended and the technician is not there yet. */
export function isLate(v, now = Date.now() / 1000) {
  const end = v.contentState && v.contentState.arrivalEndEpoch;
  return ON_THE_WAY.includes(v.status) && end !== undefined && now > end;
}

/** Active, and nothing fresh has reached the Live Activity for more than five minutes past its stale date. */
export function isStale(v, now = Date.now() / 1000) {
  return !isEnded(v.status) && typeof v.staleDate === 'number' && now > v.staleDate + STALE_GRACE;
}

/** What a delivery reading says about a visit: 'dead', 'pending' (waiting over a minute), or null. */
export function deliveryTrouble(deliveries, now = Date.now() / 1000) {
  if (deliveries.some((d) => d.state === 'dead')) return 'dead';
  if (deliveries.some((d) => (d.state === 'pending' || d.state === 'sending') && now - d.createdAt > PENDING_TOO_LONG)) return 'pending';
  return null;
}

const RECHECK_MS = 30_000;
const SETTLE_MS = 61_000;
const PARALLEL = 4;

/**
 * Which visits have a push dead or stuck. Cost: a visit's deliveries (GET /v1/visits/{id}/deliveries) are read
 * once when the board first lists it, then only when something can have changed: 61 s after its version
 * changes (a push that has not left by then is stuck), and every 30 s while its last reading held a push
 * still on its way or dead (to see it leave, die, or be retried). A settled visit costs nothing, so 2,000
 * quiet visits cost one read each when the tab opens and then nothing; at most four reads run at once,
 * and at most ten a second with the ledger's (api.js backgroundSlot).
 * `mark(visitId)` is 'dead', 'pending' or null; `onChange(visitId)` follows a reading that changed it.
 */
export function deliveryWatch(onChange) {
  const known = new Map(); // visitId → { version, at, trouble, unsettled }
  const seen = new Map(); // visitId → { version, since }: when the board first listed this version
  const latest = new Map();
  const queue = new Set();
  const reading = new Set();
  let stopped = false;

  function due(v, now) {
    const k = known.get(v.visitId);
    if (!k) return true;
    if (k.version !== v.version) return now - seen.get(v.visitId).since >= SETTLE_MS || isEnded(v.status);
    return (k.unsettled || k.trouble) && now - k.at >= RECHECK_MS;
  }

  function update(visits) {
    const now = Date.now();
    latest.clear();
    for (const v of visits) {
      latest.set(v.visitId, v);
      const s = seen.get(v.visitId);
      if (!s || s.version !== v.version) seen.set(v.visitId, { version: v.version, since: now });
    }
    for (const id of [...known.keys()]) if (!latest.has(id)) { known.delete(id); seen.delete(id); }
    for (const v of visits) if (!reading.has(v.visitId) && due(v, now)) queue.add(v.visitId);
    pump();
  }

  function pump() {
    while (!stopped && reading.size < PARALLEL && queue.size) {
      const id = queue.values().next().value;
      queue.delete(id);
      const v = latest.get(id);
      if (!v) continue;
      reading.add(id);
      check(v).finally(() => { reading.delete(id); pump(); });
    }
  }

  async function check(v) {
    const before = mark(v.visitId);
    try {
      await backgroundSlot();
      if (stopped) return;
      const { deliveries } = await api('GET', `/v1/visits/${encodeURIComponent(v.visitId)}/deliveries`);
      known.set(v.visitId, { version: v.version, at: Date.now(), trouble: deliveryTrouble(deliveries),
        unsettled: deliveries.some((d) => d.state === 'pending' || d.state === 'sending') });
    } catch (e) {
      if (e.status === 404 || e.status === 403) known.set(v.visitId, { version: v.version, at: Date.now(), trouble: null, unsettled: false });
      else return; // asked again on a later cycle
    }
    if (!stopped && mark(v.visitId) !== before) onChange(v.visitId);
  }

  function mark(visitId) { return known.get(visitId)?.trouble ?? null; }

  return { update, mark, stop() { stopped = true; queue.clear(); } };
}

const WORDS = {
  late: ['Late', 'The arrival window has ended and the technician is not there: call the customer, or post Running late from the technician\'s day.'],
  stale: ['Stale', 'No fresh update for over five minutes: the customer\'s Live Activity is dimmed. Post the distance (Progress).'],
  unfollowed: ['Customer sees nothing', 'Active, and no customer device shows it: every Live Activity lapsed, was dismissed or ended, or there is none. Call or text the customer.'],
  dead: ['Push failed', 'A push to the customer\'s device failed for good: see its deliveries; ops can retry it.'],
  pending: ['Push stuck', 'A push has waited over a minute (sending may be paused): see its deliveries.'],
};

/** The badges of one visit: each a link to the visit's page, titled with what to do. */
export function badges(v, kinds) {
  return kinds.map(({ kind, word }) => {
    const [text, advice] = WORDS[word || kind];
    return h('a', { class: 'exception ' + kind, testid: 'exception', 'data-kind': kind, title: advice,
      href: '#/visit/' + encodeURIComponent(v.visitId) }, text);
  });
}

/** The exceptions of a visit now: [{kind, word}]. */
export function exceptionsOf(v, follows, deliveries) {
  const out = [];
  if (isLate(v)) out.push({ kind: 'late' });
  if (isStale(v)) out.push({ kind: 'stale' });
  if (follows && follows.mark(v.visitId) === 'unfollowed') out.push({ kind: 'unfollowed' });
  const trouble = deliveries ? deliveries.mark(v.visitId) : null;
  if (trouble) out.push({ kind: 'delivery', word: trouble });
  return out;
}

/** Draws a visit's badges into `box` unless they are already those. */
export function drawBadges(box, v, kinds) {
  const key = kinds.map((k) => k.word || k.kind).join(',');
  if (box.dataset.kinds === key) return;
  box.dataset.kinds = key;
  replace(box, badges(v, kinds));
}
