// Building markup: every string goes in as text (textContent), never as HTML.

/** An element with attributes (`class`, `data-*`, properties for the rest) and children (strings become text). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'testid') el.dataset.testid = v;
    else if (k.startsWith('data-') || k.startsWith('aria-') || k === 'for' || k === 'role') el.setAttribute(k, v);
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
  return new Date(epoch * 1000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}

/** Epoch seconds as a moment a dispatcher reads at a glance: the time of day when it falls on the browser's
 * today, else the day and month with it (never only a relative word). */
export function moment(epoch) {
  if (epoch === null || epoch === undefined) return '—';
  const date = new Date(epoch * 1000);
  const time = date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  if (date.toDateString() === new Date().toDateString()) return time;
  return `${date.toLocaleDateString([], { day: 'numeric', month: 'short' })}, ${time}`;
}

/** Seconds as m:ss or h:mm:ss. */
export function duration(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  const hh = Math.floor(s / 3600), mm = Math.floor((s % 3600) / 60), ss = s % 60;
  const two = (n) => String(n).padStart(2, '0');
  return hh > 0 ? `${hh}:${two(mm)}:${two(ss)}` : `${mm}:${two(ss)}`;
}

/** A dialog asking for one line of text (a reason, a technician); resolves to the values or null. */
export function ask(title, fields) {
  return new Promise((resolve) => {
    const inputs = fields.map((f) => h('input', { name: f.name, required: f.required !== false, value: f.value || '' }));
    const form = h('form', { method: 'dialog', class: 'stack' },
      h('h2', {}, title),
      fields.map((f, i) => h('label', {}, f.label, inputs[i])),
      h('div', { class: 'row' },
        h('button', { type: 'submit', value: 'ok', testid: 'dialog-ok' }, 'OK'),
        h('button', { type: 'button', class: 'secondary', onclick: () => { dialog.close('cancel'); } }, 'Cancel')));
    const dialog = h('dialog', { class: 'card' }, form);
    dialog.addEventListener('close', () => {
      const ok = dialog.returnValue === 'ok';
      const values = Object.fromEntries(inputs.map((i) => [i.name, i.value.trim()]));
      dialog.remove();
      resolve(ok ? values : null);
    });
    document.body.append(dialog);
    dialog.showModal();
    inputs[0]?.focus();
  });
}
