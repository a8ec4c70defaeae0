// The visit's Live Activity drawn as the customer's iPhone shows it, after seed 000's views ("Lock Screen view
// with timer and progress", "Dynamic Island, all regions"), from the visit's contentState and attributes.
import { h, replace, duration, when } from './dom.js';
import { LABELS, isEnded } from './transitions.js';

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

function avatar(c) {
  const initial = (c.technicianName || '?').trim().charAt(0).toUpperCase() || '?';
  return h('span', { class: 'la-avatar', title: c.avatarSymbol || '', 'aria-hidden': 'true' }, initial);
}

/**
 * Whether the customer's phone has what the preview draws, from the visit's deliveries (newest first): null when
 * the newest push to an activity or channel was sent (or there is none to judge), else what holds it back —
 * `sending` (on its way), `paused` (waiting to retry after APNs refused it), `failed` (dead or expired).
 */
export function deliveryTruth(deliveries) {
  const last = (deliveries || []).find((d) => d.target !== 'device' && ['start', 'update', 'end'].includes(d.kind));
  if (!last) return null;
  if (last.state === 'dead' || last.state === 'expired') {
    return { state: 'failed', text: `Failed: this ${last.kind} push did not reach the phone (${last.lastStatus ?? ''} ${last.lastReason ?? ''}); it still shows an earlier state.` };
  }
  if (last.state === 'pending' && last.attempts > 0) {
    return { state: 'paused', text: `Paused: APNs answered ${last.lastStatus ?? '?'}${last.lastReason ? ' ' + last.lastReason : ''}; the phone shows the previous state until the retry goes through.` };
  }
  if (last.state === 'pending' || last.state === 'sending') return { state: 'sending', text: 'Sending…: the phone shows the previous state until this push arrives.' };
  return null;
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

export function drawActivity(container, visit, deliveries = null) {
  const c = visit.contentState || {};
  const a = visit.attributes || {};
  const now = Date.now() / 1000;
  const ended = isEnded(visit.status);
  const stale = !ended && visit.staleDate && now > visit.staleDate;
  const km = Number(c.kilometresAway || 0);
  const timer = stale
    ? h('span', { class: 'la-stale', testid: 'stale' }, '↻ Waiting for fresh data')
    : h('span', { class: 'la-timer' }, ended ? LABELS[visit.status] : countdown(c, now));

  const dim = stale ? ' stale' : '';
  const lock = h('div', { class: 'lock-screen' + (ended ? ' ended' : '') + dim, testid: 'lock-screen', 'data-status': visit.status },
    h('div', { class: 'la-row' }, avatar(c), h('strong', { class: 'la-name' }, c.technicianName || ''), timer),
    h('div', { class: 'la-status' }, LABELS[c.status] || c.status || '', c.vanDescription ? ` · ${c.vanDescription}` : ''),
    progressBar(km),
    h('div', { class: 'la-row small' }, h('span', { class: 'la-job' }, a.jobSummary ?? ''), h('span', { class: 'la-address' }, a.serviceAddress ?? '')));

  const compact = h('div', { class: 'island island-compact' + dim, testid: 'island-compact' },
    h('span', { class: 'la-icon', 'aria-label': 'service visit' }, TOOL),
    h('span', { class: 'island-gap' }),
    h('span', { class: 'la-timer' }, ended ? '✓' : countdown(c, now)));

  const minimal = h('div', { class: 'island island-minimal' + dim, testid: 'island-minimal' }, h('span', { class: 'la-icon orange', 'aria-label': 'service visit' }, TOOL));

  const expanded = h('div', { class: 'island island-expanded' + dim, testid: 'island-expanded' },
    h('div', { class: 'la-row' },
      h('span', { class: 'island-leading' }, avatar(c), ' ', c.technicianName || ''),
      h('span', { class: 'island-center' }, LABELS[c.status] || c.status || ''),
      h('span', { class: 'island-trailing' }, h('span', { class: 'la-timer' }, ended ? '' : countdown(c, now)),
        h('span', { class: 'small' }, `${km.toFixed(1)} km`))),
    progressBar(km),
    h('div', { class: 'la-row small' }, h('span', {}, `${TOOL} `, a.jobSummary ?? ''), h('span', {}, `${HOUSE} `, a.serviceAddress ?? '')));

  let footer = null;
  if (ended) {
    const d = visit.dismissal;
    let text = 'Ended.';
    if (d && d.policy === 'immediate') text = 'Ended: dismissed from the Lock Screen at once.';
    else if (d && d.policy === 'after') text = `Ended: stays on the Lock Screen until ${when(d.date)}.`;
    else if (d && d.policy === 'default') text = 'Ended: iOS dismisses it after its default time (up to 4 hours).';
    footer = h('p', { class: 'la-dismissal', testid: 'dismissal' }, text);
  } else if (stale) {
    footer = h('p', { class: 'muted small' }, `Stale since ${when(visit.staleDate)}.`);
  } else if (visit.staleDate) {
    footer = h('p', { class: 'muted small' }, `Fresh until ${when(visit.staleDate)} · relevance ${visit.relevanceScore}`);
  }

  // What imitates the phone is drawn in the visit's language and direction.
  const { lang, dir } = phoneLanguage(visit);
  for (const node of [lock, compact, minimal, expanded]) {
    node.setAttribute('lang', lang);
    node.setAttribute('dir', dir);
  }

  const truth = deliveryTruth(deliveries);
  replace(container,
    truth ? h('p', { class: 'preview-truth ' + truth.state, testid: 'preview-truth', 'data-state': truth.state }, truth.text) : null,
    h('div', { class: 'phone' }, h('div', { class: 'phone-label muted small' }, 'Lock Screen'), lock),
    // iOS removes the Dynamic Island as soon as the activity ends; the Lock Screen keeps it until its dismissal.
    ended ? h('p', { class: 'muted small', testid: 'island-gone' }, 'Dynamic Island: gone (iOS removes it when the activity ends).')
      : h('div', { class: 'islands' },
        h('div', {}, h('div', { class: 'muted small' }, 'Dynamic Island: compact'), compact),
        h('div', {}, h('div', { class: 'muted small' }, 'minimal'), minimal),
        h('div', { class: 'wide' }, h('div', { class: 'muted small' }, 'expanded'), expanded)),
    footer);
}
