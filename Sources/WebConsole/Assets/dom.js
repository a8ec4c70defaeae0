// Building markup: every string goes in as text (textContent), never as HTML.

/** An element with attributes (`class`, `data-*`, properties for the rest) and children (strings become text). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'testid') el.dataset.testid = v;
    else if (k.startsWith('data-') || k.startsWith('aria-') || k === 'for' || k === 'role' || k === 'list') el.setAttribute(k, v);
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el[k] = v;
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Replaces an element's children. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** Epoch seconds as local date and time. */
export function when(epoch) {
  if (epoch === null || epoch === undefined) return '—';
  return new Date(epoch * 1000).toLocaleString([], { dateStyle: 'short', timeStyle: 'medium' });
}

/** Epoch seconds as local time of day. */
export function clock(epoch) {
  return TIME.format(new Date(epoch * 1000));
}

// Formatters made once: a toLocale…String call builds a new one each time, which costs more than the drawing
// when a day by technician lays out thousands of blocks.
const TIME = new Intl.DateTimeFormat([], { hour: '2-digit', minute: '2-digit' });
const DAY_MONTH = new Intl.DateTimeFormat([], { day: 'numeric', month: 'short' });
const HOUR = new Intl.DateTimeFormat([], { hour: 'numeric' });

/** Epoch seconds as the hour alone ("7 AM", "07"), for a time axis. */
export function hour(epoch) {
  return HOUR.format(new Date(epoch * 1000));
}

/** Epoch seconds as a moment a dispatcher reads at a glance: the time of day when it falls on the browser's
 * today, else the day and month with it (never only a relative word). */
export function moment(epoch) {
  if (epoch === null || epoch === undefined) return '—';
  const date = new Date(epoch * 1000);
  const time = TIME.format(date);
  const today = new Date();
  if (date.getFullYear() === today.getFullYear() && date.getMonth() === today.getMonth() && date.getDate() === today.getDate()) return time;
  return `${DAY_MONTH.format(date)}, ${time}`;
}

/** An arrival window as "09:30–10:30" on the browser's today, with the day and month otherwise. */
export function windowText(c) {
  if (!c || !c.arrivalStartEpoch) return '';
  const a = new Date(c.arrivalStartEpoch * 1000), b = new Date(c.arrivalEndEpoch * 1000);
  const sameDay = a.getFullYear() === b.getFullYear() && a.getMonth() === b.getMonth() && a.getDate() === b.getDate();
  return `${moment(c.arrivalStartEpoch)}–${sameDay ? clock(c.arrivalEndEpoch) : moment(c.arrivalEndEpoch)}`;
}

/** Seconds as m:ss or h:mm:ss. */
export function duration(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  const hh = Math.floor(s / 3600), mm = Math.floor((s % 3600) / 60), ss = s % 60;
  const two = (n) => String(n).padStart(2, '0');
  return hh > 0 ? `${hh}:${two(mm)}:${two(ss)}` : `${mm}:${two(ss)}`;
}

/**
 * A modal dialog: a title, optional lines of text, optional fields; resolves to the fields' values (trimmed)
 * or null when cancelled. `validate(values)` may return a sentence that is shown in the dialog and keeps it
 * open. `testid` names the dialog and its buttons (`<testid>-ok`, `<testid>-cancel`); a field is
 * `{name, label, value?, required?, type?, inputmode?, hint?, options?}` (`options`: a select's
 * `[{value, label}]`; `onchange(value, inputs)` follows a select's choice).
 */
export function dialog({ title, lines = [], fields = [], ok = 'OK', testid = 'dialog', validate = () => null }) {
  return new Promise((resolve) => {
    const inputs = fields.map((f) => f.options
      ? h('select', { name: f.name, testid: f.testid }, f.options.map((o) => h('option', { value: o.value }, o.label)))
      : h('input', { name: f.name, required: f.required !== false, value: f.value ?? '', type: f.type || 'text',
        inputMode: f.inputmode, autocomplete: 'off', testid: f.testid, list: f.list }));
    fields.forEach((f, i) => { if (f.onchange) inputs[i].addEventListener('change', () => f.onchange(inputs[i].value, inputs)); });
    const values = () => Object.fromEntries(inputs.map((i) => [i.name, i.value.trim()]));
    const error = h('p', { class: 'error', role: 'alert', testid: testid + '-error' });
    const form = h('form', { method: 'dialog', class: 'stack', noValidate: true },
      h('h2', {}, title),
      lines.map((line) => (line instanceof Node ? line : h('p', {}, line))),
      fields.map((f, i) => h('label', {}, f.label, inputs[i], f.hint ? h('span', { class: 'small muted' }, f.hint) : null)),
      error,
      h('div', { class: 'row' },
        h('button', { type: 'submit', value: 'ok', testid: testid + '-ok' }, ok),
        h('button', { type: 'button', class: 'secondary', testid: testid + '-cancel', onclick: () => { box.close('cancel'); } }, 'Cancel')));
    form.addEventListener('submit', (event) => {
      const missing = fields.find((f, i) => f.required !== false && !inputs[i].value.trim());
      const problem = missing ? `${missing.label} is needed.` : validate(values());
      if (problem) { event.preventDefault(); error.textContent = problem; return; }
    });
    const box = h('dialog', { class: 'card', testid });
    box.append(form);
    box.addEventListener('close', () => {
      const done = box.returnValue === 'ok' ? values() : null;
      box.remove();
      resolve(done);
    });
    document.body.append(box);
    box.showModal();
    // A confirmation (no field) starts on Cancel: Enter alone never sends what reaches a customer.
    (inputs[0] || form.querySelector(`[data-testid="${testid}-cancel"]`)).focus();
  });
}

/** A dialog asking for one line of text (a reason, a technician); resolves to the values or null. */
export function ask(title, fields, options = {}) {
  return dialog({ title, fields, ...options });
}

/** A distance typed by a person: "3.4", "3,4" or " 12 " are kilometres; anything else is NaN. */
export function kilometres(text) {
  const t = String(text).trim().replace(',', '.');
  return /^\d+(\.\d+)?$|^\.\d+$/.test(t) ? Number(t) : NaN;
}

/** The distance check of a dialog: a sentence when `text` is not a distance the API accepts, else null. */
export function distanceProblem(text) {
  const km = kilometres(text);
  if (Number.isNaN(km)) return `"${text}" is not a distance: type the kilometres as a number, like 3.4.`;
  if (km > 40_000) return 'That is further than around the Earth: type the kilometres, like 3.4.';
  return null;
}

/** Runs `work` with `buttons` disabled (a request in flight cannot be sent twice), re-enabling them after. */
export async function busy(buttons, work) {
  const list = [...buttons];
  for (const b of list) b.disabled = true;
  try { return await work(); } finally { for (const b of list) b.disabled = false; }
}
