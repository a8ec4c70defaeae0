// The tracking page: the visit's Lock Screen card for a customer without the app, drawn from this link's
// state (`<this page>/state`). Once it has a version it asks `?after=<version>` (with the version as
// `If-None-Match`): the server holds that request until the card changes (then 200 with the new card) or its
// hold of about 25 s ends (then a 304 without a body), and the page asks again at once — but never sooner than
// 1.5 s after its previous ask. So a change shows within moments, and a quiet page asks about twice a minute.
// Every text goes in as text, never as markup; the link's address is sent nowhere but to its own state call.

// Every word the page shows comes with the page, in the visit's language (`#labels`, from the rules' texts for
// that language); English when the block is missing. `{km}` and `{time}` are filled in here.
const ENGLISH = {
  title: 'Your visit', arrival: 'Arrival window', away: '{km} km away',
  stale: 'May be out of date: waiting for fresh news', ended: 'This visit has ended.',
  endedUntil: 'This visit has ended. This card stays until {time}.',
  gone: 'This tracking link has expired or is not valid.', offline: 'Cannot reach the server: this may be out of date.',
  statuses: {
    scheduled: 'Scheduled', enRoute: 'On the way', nearby: 'Nearby', onSite: 'On site', finishing: 'Finishing',
    completed: 'Completed', cancelled: 'Cancelled', failed: 'Could not be completed',
  },
};

function readLabels() {
  try {
    const block = document.getElementById('labels');
    return block ? { ...ENGLISH, ...JSON.parse(block.textContent) } : ENGLISH;
  } catch {
    return ENGLISH;
  }
}
const LABELS = readLabels();
// The page's language (`<html lang>`) sets how times are written.
const LANGUAGE = document.documentElement.lang || undefined;
const filled = (text, key, value) => text.split(`{${key}}`).join(value);

// Stand-ins for the SF Symbols an avatar may name, in characters the common system fonts have (emoji fonts
// are not everywhere); a person, or any other symbol, shows the technician's initial.
const SYMBOLS = {
  'wrench.fill': '\u2692', 'wrench.and.screwdriver': '\u2692', 'wrench.and.screwdriver.fill': '\u2692',
  'hammer.fill': '\u2692', 'hammer': '\u2692', 'bolt.fill': '\u26A1', 'bolt': '\u26A1',
};
const ENDED = ['completed', 'cancelled', 'failed'];
const POLL_MS = 1500;

const root = document.getElementById('track');
const stateURL = location.pathname.replace(/\/+$/, '') + '/state';
let last = null;
// The version `last` was drawn from (its ETag's number), or null before the first answer.
let version = null;
let offline = false;
let stopped = false;

/** An element with a class and children (strings become text nodes). */
function el(tag, cls, ...children) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function timeFormat() {
  try {
    return new Intl.DateTimeFormat(LANGUAGE, { hour: '2-digit', minute: '2-digit' });
  } catch {
    return new Intl.DateTimeFormat([], { hour: '2-digit', minute: '2-digit' });
  }
}
const TIME = timeFormat();
const time = (epoch) => TIME.format(new Date(epoch * 1000));

function countdown(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  const hh = Math.floor(s / 3600), mm = Math.floor((s % 3600) / 60), ss = s % 60;
  const two = (n) => String(n).padStart(2, '0');
  return hh > 0 ? `${hh}:${two(mm)}:${two(ss)}` : `${mm}:${two(ss)}`;
}

function avatar(s) {
  const symbol = SYMBOLS[s.avatarSymbol];
  const initial = (s.technicianName || '?').trim().charAt(0).toUpperCase() || '?';
  const node = el('span', 'la-avatar', symbol || initial);
  node.setAttribute('aria-hidden', 'true');
  return node;
}

function draw() {
  const now = Date.now() / 1000;
  const s = last;
  if (!s) return;
  const ended = ENDED.includes(s.status);
  const d = s.dismissal;
  const dismissed = ended && d && (d.policy === 'immediate' || (d.policy === 'after' && now >= d.date));
  if (dismissed) {
    root.replaceChildren(el('p', 'note', LABELS.ended));
    root.firstChild.dataset.testid = 'dismissal';
    return;
  }
  const stale = !ended && s.staleDate && now > s.staleDate;
  const km = Math.max(0, Number(s.kilometresAway || 0));
  const fill = el('div', 'la-fill');
  fill.style.width = `${(Math.max(0, 15 - km) / 15) * 100}%`;
  const card = el('section', 'lock-screen' + (ended ? ' ended' : '') + (stale ? ' stale' : ''),
    el('div', 'la-row', avatar(s), el('strong', 'la-name', s.technicianName || ''),
      el('span', 'la-timer', ended ? LABELS.statuses[s.status] || s.status : countdown(s.arrivalEndEpoch - now))),
    el('div', 'la-status', LABELS.statuses[s.status] || s.status || '', s.vanDescription ? ` · ${s.vanDescription}` : ''),
    el('div', 'la-status', `${LABELS.arrival}: ${time(s.arrivalStartEpoch)}–${time(s.arrivalEndEpoch)}`),
    el('div', 'la-progress', fill),
    el('div', 'la-row', el('span', 'la-job', s.jobSummary ?? ''), el('span', 'la-away', filled(LABELS.away, 'km', km.toLocaleString(LANGUAGE, { minimumFractionDigits: 1, maximumFractionDigits: 1 })))));
  card.dataset.testid = 'lock-screen';
  card.dataset.status = s.status;
  let footer = null;
  if (ended) {
    footer = el('p', 'note', d && d.policy === 'after' ? filled(LABELS.endedUntil, 'time', time(d.date)) : LABELS.ended);
    footer.dataset.testid = 'dismissal';
  } else if (stale || offline) {
    footer = el('p', 'note warn', stale ? LABELS.stale : LABELS.offline);
    footer.dataset.testid = 'stale';
  }
  root.replaceChildren(card, footer || '');
}

function gone() {
  stopped = true;
  const note = el('h1', '', LABELS.gone);
  note.dataset.testid = 'track-gone';
  root.replaceChildren(note);
}

async function poll() {
  if (stopped) return;
  const asked = Date.now();
  try {
    const headers = version === null ? {} : { 'If-None-Match': `"${version}"` };
    const url = version === null ? stateURL : `${stateURL}?after=${version}`;
    const answer = await fetch(url, { cache: 'no-store', credentials: 'omit', referrerPolicy: 'no-referrer', headers });
    if (answer.status === 404) return gone();
    if (answer.status === 304) offline = false;
    else if (answer.ok) {
      last = await answer.json();
      const tag = (answer.headers.get('ETag') || '').replace(/"/g, '');
      version = /^[0-9]+$/.test(tag) ? tag : null;
      offline = false;
    } else offline = true;
  } catch {
    offline = true;
  }
  draw();
  setTimeout(poll, Math.max(0, asked + POLL_MS - Date.now()));
}

document.title = LABELS.title;
setInterval(() => { if (!stopped) draw(); }, 1000);
poll();
