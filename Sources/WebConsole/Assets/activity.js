// The visit's Live Activity drawn as the customer's iPhone shows it, after seed 000's views ("Lock Screen view
// with timer and progress", "Dynamic Island, all regions"): the state the phone last acknowledged (from the
// visit's deliveries), and beside it, when the server intends another, that one with what holds it back.
import { h, replace, duration, when, windowText } from './dom.js';
import { LABELS, isEnded } from './transitions.js';
import { showsNothing } from './ledger.js';

// Stand-ins for the SF Symbols of the seed's views ("wrench.and.screwdriver", "house"), in fonts every system has.
const TOOL = '\u2692';
const HOUSE = '\u2302';

/** The distance bar of the seed's views: max(0, 15 - km) of 15. */
function progressBar(km) {
  const fill = h('div', { class: 'la-fill' });
  fill.style.width = `${(Math.max(0, 15 - km) / 15) * 100}%`;
  return h('div', { class: 'la-progress', role: 'progressbar', 'aria-valuemin': '0', 'aria-valuemax': '15', 'aria-valuenow': String(Math.max(0, 15 - km).toFixed(1)) }, fill);
}

/** Text(timerInterval: arrivalWindow, countsDown: true): the time left until the window ends. */
function countdown(c, now) { return duration(c.arrivalEndEpoch - now); }
/**
 * The timer's place: a countdown to the window's end while the technician is on the way; from on site on the
 * window is collapsed to the arrival, so a countdown would sit at 0:00 — the status reads there instead.
 */
function timerText(c, now) {
  return c.status === 'onSite' || c.status === 'finishing' ? LABELS[c.status] : countdown(c, now);
}

function avatar(c) {
  const initial = (c.technicianName || '?').trim().charAt(0).toUpperCase() || '?';
  return h('span', { class: 'la-avatar', title: c.avatarSymbol || '', 'aria-hidden': 'true' }, initial);
}

const ACTIVITY_KINDS = ['start', 'update', 'end'];

/** A push that changes what a Live Activity shows: a start, update or end, not a notification to a device. */
function isActivityPush(d) {
  return d.target !== 'device' && ACTIVITY_KINDS.includes(d.kind);
}

/**
 * The push whose state the customer's phone shows: of the visit's Live Activity pushes APNs accepted, the one
 * with the greatest `aps.timestamp` (iOS ignores a push older than what it shows); null when none was accepted.
 */
export function acknowledged(deliveries) {
  let best = null;
  for (const d of deliveries || []) {
    if (!isActivityPush(d) || d.state !== 'sent' || !d.contentState) continue;
    if (!best || d.timestamp > best.timestamp || (d.timestamp === best.timestamp && d.id > best.id)) best = d;
  }
  return best;
}

const answer = (d) => (d.lastStatus === null || d.lastStatus === undefined ? 'no answer' : String(d.lastStatus)) + (d.lastReason ? ' ' + d.lastReason : '');

/**
 * What holds back the server's intended state, from the visit's deliveries (newest first): the newest Live
 * Activity push made after the one the phone shows that has not been accepted — `sending` (on its way),
 * `paused` (APNs answered 403, a configuration problem: sending waits out a pause), `retrying` (another
 * refusal, tried again with backoff), `failed` (dead or expired), `cancelled` (never to be sent) — or null.
 */
export function deliveryTruth(deliveries, shown = acknowledged(deliveries)) {
  const last = (deliveries || []).find((d) => isActivityPush(d) && d.state !== 'sent' && d.state !== 'superseded'
    && (!shown || d.timestamp > shown.timestamp || d.id > shown.id));
  if (!last) return null;
  if (last.state === 'dead' || last.state === 'expired') {
    return { state: 'failed', text: `Failed: this ${last.kind} push did not reach the phone (${answer(last)}); it is not sent again unless ops retries it.` };
  }
  if (last.state === 'cancelled') return { state: 'cancelled', text: `Not sent: ${last.lastReason || 'this push was cancelled'}.` };
  if (last.state === 'pending' && last.attempts > 0 && last.lastStatus === 403) {
    return { state: 'paused', text: `Paused: APNs answered ${answer(last)} (a configuration problem). Sending waits out a pause, then tries again; ${last.attempts} attempt${last.attempts === 1 ? '' : 's'} so far.` };
  }
  if (last.state === 'pending' && last.attempts > 0) {
    return { state: 'retrying', text: `Retrying: APNs answered ${answer(last)}; tried ${last.attempts} time${last.attempts === 1 ? '' : 's'}, trying again.` };
  }
  return { state: 'sending', text: 'Sending…: on its way to APNs.' };
}

const FIELDS = ['technicianName', 'avatarSymbol', 'vanDescription', 'arrivalStartEpoch', 'arrivalEndEpoch', 'status', 'kilometresAway'];

/** What differs between two content states, as a person reads it ("Distance 12.0 km → 4.5 km"). */
function changes(from, to) {
  const out = [];
  if (from.status !== to.status) out.push(`${LABELS[from.status] || from.status} → ${LABELS[to.status] || to.status}`);
  if (Number(from.kilometresAway) !== Number(to.kilometresAway)) {
    out.push(`distance ${Number(from.kilometresAway || 0).toFixed(1)} km → ${Number(to.kilometresAway || 0).toFixed(1)} km`);
  }
  if (from.technicianName !== to.technicianName) out.push(`technician ${from.technicianName} → ${to.technicianName}`);
  if (from.vanDescription !== to.vanDescription) out.push(`van ${from.vanDescription} → ${to.vanDescription}`);
  if (from.arrivalStartEpoch !== to.arrivalStartEpoch || from.arrivalEndEpoch !== to.arrivalEndEpoch) {
    out.push(`arrival ${windowText(from)} → ${windowText(to)}`);
  }
  if (!out.length && from.avatarSymbol !== to.avatarSymbol) out.push('avatar');
  return out;
}

const sameState = (a, b) => FIELDS.every((k) => (k === 'kilometresAway' ? Number(a[k]) === Number(b[k]) : a[k] === b[k]));

/** The dismissal line of an ended activity: from the policy the visit names (`visit.dismissal`), or from an end
 * push's `dismissal-date` and `aps.timestamp`. */
function dismissalText(policy, date, now) {
  if (policy === 'immediate') return 'Ended: dismissed from the Lock Screen at once.';
  if (policy === 'after') return now >= date ? `Ended: dismissed from the Lock Screen at ${when(date)}.` : `Ended: stays on the Lock Screen until ${when(date)}.`;
  if (policy === 'default') return 'Ended: iOS dismisses it after its default time (up to 4 hours).';
  return 'Ended.';
}

/**
 * One Live Activity drawn in every form: the Lock Screen card, and the Dynamic Island (compact, minimal,
 * expanded) unless it ended — iOS removes the Island at once, the Lock Screen keeps it until its dismissal.
 * Stale dims every form. `testids`: whether these are the page's forms a browser test finds (`lock-screen`,
 * `island-…`, `stale`, `dismissal`); `islands`: whether to draw the Island at all.
 */
function forms(c, a, { ended, stale, staleDate, relevance, dismissal, now, testids = true, islands = true }) {
  const id = (name) => (testids ? name : undefined);
  const km = Number(c.kilometresAway || 0);
  const timer = stale
    ? h('span', { class: 'la-stale', testid: id('stale') }, '↻ Waiting for fresh data')
    : h('span', { class: 'la-timer' }, ended ? LABELS[c.status] || c.status : timerText(c, now));

  const dim = stale ? ' stale' : '';
  // Dismissed: iOS has taken it off the Lock Screen too; drawn faded, so the last state stays readable.
  const dismissed = ended && (dismissal.policy === 'immediate' || (dismissal.policy === 'after' && now >= dismissal.date));
  const lock = h('div', { class: 'lock-screen' + (ended ? ' ended' : '') + (dismissed ? ' dismissed' : '') + dim, testid: testids ? 'lock-screen' : 'intended-lock-screen', 'data-status': c.status },
    h('div', { class: 'la-row' }, avatar(c), h('strong', { class: 'la-name' }, c.technicianName || ''), timer),
    h('div', { class: 'la-status' }, LABELS[c.status] || c.status || '', c.vanDescription ? ` · ${c.vanDescription}` : ''),
    progressBar(km),
    h('div', { class: 'la-row small' }, h('span', { class: 'la-job' }, a.jobSummary ?? ''), h('span', { class: 'la-address' }, a.serviceAddress ?? '')));

  let island = null;
  if (ended) {
    if (islands) island = h('p', { class: 'muted small', testid: id('island-gone') }, 'Dynamic Island: gone (iOS removes it when the activity ends).');
  } else if (islands) {
    const compact = h('div', { class: 'island island-compact' + dim, testid: id('island-compact') },
      h('span', { class: 'la-icon', 'aria-label': 'service visit' }, TOOL),
      h('span', { class: 'island-gap' }),
      h('span', { class: 'la-timer' }, timerText(c, now)));
    const minimal = h('div', { class: 'island island-minimal' + dim, testid: id('island-minimal') }, h('span', { class: 'la-icon orange', 'aria-label': 'service visit' }, TOOL));
    const expanded = h('div', { class: 'island island-expanded' + dim, testid: id('island-expanded') },
      h('div', { class: 'la-row' },
        h('span', { class: 'island-leading' }, avatar(c), ' ', c.technicianName || ''),
        h('span', { class: 'island-center' }, LABELS[c.status] || c.status || ''),
        h('span', { class: 'island-trailing' }, h('span', { class: 'la-timer' }, timerText(c, now)),
          h('span', { class: 'small' }, `${km.toFixed(1)} km`))),
      progressBar(km),
      h('div', { class: 'la-row small' }, h('span', {}, `${TOOL} `, a.jobSummary ?? ''), h('span', {}, `${HOUSE} `, a.serviceAddress ?? '')));
    island = h('div', { class: 'islands' },
      h('div', {}, h('div', { class: 'muted small' }, 'Dynamic Island: compact'), compact),
      h('div', {}, h('div', { class: 'muted small' }, 'minimal'), minimal),
      h('div', { class: 'wide' }, h('div', { class: 'muted small' }, 'expanded'), expanded));
  }

  let footer = null;
  if (ended) footer = h('p', { class: 'la-dismissal', testid: id('dismissal') }, dismissalText(dismissal.policy, dismissal.date, now));
  else if (stale) footer = h('p', { class: 'muted small' }, `Stale since ${when(staleDate)}.`);
  else if (staleDate) footer = h('p', { class: 'muted small' }, `Fresh until ${when(staleDate)}${relevance === undefined ? '' : ` · relevance ${relevance}`}`);

  return [h('div', { class: 'phone' }, h('div', { class: 'phone-label muted small' }, dismissed ? 'Lock Screen: gone (dismissed)' : 'Lock Screen'), lock), island, footer];
}

/** The server's intended state in the forms' terms, from the visit. */
function intendedForms(visit, now, options = {}) {
  const ended = isEnded(visit.status);
  const d = visit.dismissal || {};
  return forms(visit.contentState || {}, visit.attributes || {}, {
    ended, stale: !ended && visit.staleDate && now > visit.staleDate, staleDate: visit.staleDate,
    relevance: visit.relevanceScore, dismissal: { policy: d.policy, date: d.date }, now, ...options,
  });
}

/** The acknowledged push's state in the forms' terms: ended once an end was accepted, stale after its stale date. */
function phoneForms(shown, visit, now) {
  const ended = shown.kind === 'end';
  let policy = 'default';
  if (shown.dismissalDate !== null && shown.dismissalDate !== undefined) policy = shown.dismissalDate <= shown.timestamp ? 'immediate' : 'after';
  return forms(shown.contentState, visit.attributes || {}, {
    ended, stale: !ended && shown.staleDate && now > shown.staleDate, staleDate: shown.staleDate,
    dismissal: { policy, date: shown.dismissalDate }, now,
  });
}

/** The devices still showing the visit whose activity acknowledged only an earlier push than the one drawn (the
 * ledger's last acknowledged `aps.timestamp`, known for pushes to an activity, not for broadcasts), or null. */
function behindLine(ledger, deliveries, shown) {
  const behind = (ledger || []).filter((e) => (e.state === 'active' || e.state === 'stale')
    && e.lastTimestamp !== null && e.lastTimestamp !== undefined && e.lastTimestamp < shown.timestamp);
  if (!behind.length) return null;
  const why = (e) => {
    const held = deliveries.find((d) => d.target === 'activity' && d.activityId === e.activityId && d.timestamp > e.lastTimestamp
      && d.state !== 'sent' && d.state !== 'superseded');
    return held ? `its push ${held.state}${held.attempts > 0 ? ', ' + answer(held) : ''}` : 'no newer push acknowledged';
  };
  return h('p', { class: 'preview-behind', testid: 'preview-behind' },
    `${behind.length === 1 ? 'One device shows' : `${behind.length} devices show`} an earlier state: `
    + behind.map((e) => `${e.deviceId ?? e.activityId} (${why(e)})`).join(', ') + '.');
}

/**
 * The language the phone draws the visit in: the visit's `locale` (what its pushed texts are written in), with
 * its writing direction; the console's own words around the preview stay English.
 */
export function phoneLanguage(visit) {
  const lang = typeof visit.locale === 'string' ? visit.locale : '';
  if (!lang) return { lang: 'en', dir: 'ltr' };
  let dir = /^(ar|he|iw|fa|ur|ps|sd|ug|yi|dv|ckb|syr|ks)(-|$)/i.test(lang) ? 'rtl' : 'ltr';
  try {
    const info = new Intl.Locale(lang);
    const text = info.getTextInfo ? info.getTextInfo() : info.textInfo;
    if (text && text.direction) dir = text.direction;
  } catch { /* a tag the browser does not know: the guess above */ }
  return { lang, dir };
}

/**
 * The visit's Live Activity drawn into `container` (see `drawForms`), every form that imitates the phone in
 * the visit's language and direction.
 */
export function drawActivity(container, visit, deliveries = null, ledger = null) {
  drawForms(container, visit, deliveries, ledger);
  const { lang, dir } = phoneLanguage(visit);
  for (const node of container.querySelectorAll('.lock-screen, .island')) {
    node.setAttribute('lang', lang);
    node.setAttribute('dir', dir);
  }
}

/**
 * Draws the visit's Live Activity as the customer's phone shows it. `deliveries` (the visit's, newest first, or
 * null when this key cannot read them or they are not read yet) say what the phone acknowledged: that state is
 * drawn "On the phone"; when the server intends another, it is drawn beside it, labelled with what holds it
 * back. With nothing acknowledged yet the page says so, and draws the intended state dimmed in its place.
 * `ledger` (the visit's Live Activities, when read) tells when no device shows the visit any more.
 */
function drawForms(container, visit, deliveries = null, ledger = null) {
  const now = Date.now() / 1000;
  const intended = visit.contentState || {};
  const truth = deliveries ? deliveryTruth(deliveries) : null;
  const truthLine = (t) => h('p', { class: 'preview-truth ' + t.state, testid: 'preview-truth', 'data-state': t.state }, t.text);

  if (!deliveries) {
    replace(container, h('section', { class: 'preview-phone', testid: 'preview-phone', 'data-shows': 'unknown' },
      h('h3', {}, 'As the server intends it'),
      h('p', { class: 'muted small', testid: 'preview-phone-note' }, 'What the phone acknowledged is read from the deliveries (dispatcher and ops keys).'),
      intendedForms(visit, now)));
    return;
  }

  const shown = acknowledged(deliveries);
  if (!shown) {
    const why = truth ? truthLine(truth)
      : h('p', { class: 'preview-truth unsent', testid: 'preview-truth', 'data-state': 'unsent' },
        deliveries.length ? 'Not sent: no push of this visit is on its way to a Live Activity.' : 'Not sent: no device follows this visit yet (no Live Activity, no push-to-start token).');
    replace(container, h('section', { class: 'preview-phone nothing', testid: 'preview-phone', 'data-shows': 'nothing' },
      h('h3', {}, 'On the phone: nothing yet'),
      h('p', { class: 'muted small', testid: 'preview-phone-note' }, 'No Live Activity push of this visit was acknowledged by APNs'
        + (ledger && ledger.some((e) => e.origin === 'app' && (e.state === 'active' || e.state === 'stale'))
          ? ': a phone shows at most the state the app started its activity with.' : '.')
        + ' Drawn dimmed below: what it will show once one is.'),
      why,
      h('div', { class: 'not-on-phone' }, intendedForms(visit, now))));
    return;
  }

  const ended = isEnded(visit.status);
  const differs = !sameState(shown.contentState, intended) || ended !== (shown.kind === 'end');
  const phone = h('section', { class: 'preview-phone', testid: 'preview-phone', 'data-shows': 'acknowledged' },
    h('h3', {}, 'On the phone'),
    h('p', { class: 'muted small', testid: 'preview-phone-note' },
      `The ${shown.kind} push APNs accepted at ${when(shown.sentAt)} (state of ${when(shown.timestamp)}).`
      + (ledger && ledger.length && showsNothing(ledger) ? ' No device shows the visit any more (see the ledger): this is the last state one acknowledged.' : '')),
    behindLine(ledger, deliveries, shown),
    phoneForms(shown, visit, now));
  if (!differs) {
    replace(container, phone);
    return;
  }
  const held = truth || { state: 'unsent', text: 'Not sent: no push of this state is on its way to the phone (no Live Activity to send it to).' };
  const HEADS = { sending: 'Sending…', paused: 'Paused', retrying: 'Retrying', failed: 'Failed', cancelled: 'Not sent', unsent: 'Not sent' };
  const list = changes(shown.contentState, intended);
  if (ended !== (shown.kind === 'end')) list.push(ended ? 'the activity ends' : 'the activity goes on');
  replace(container, phone,
    h('section', { class: 'preview-intended ' + held.state, testid: 'preview-intended', 'data-state': held.state },
      h('h3', {}, `What the server intends · ${HEADS[held.state]}`),
      h('p', { class: 'preview-truth ' + held.state, testid: 'preview-truth', 'data-state': held.state }, held.text),
      h('p', { testid: 'preview-changes' }, `Not on the phone yet: ${list.join(' · ')}.`),
      intendedForms(visit, now, { testids: false, islands: false })));
}
