// Ops: the outbox's depth (the pushes waiting to go) and its finished deliveries by state (from /metrics), the
// sending pause and its reason, dead letters with retry, broadcast channels, the projection replay. Retry and
// replay ask first.
import { api, explain } from './api.js';
import { h, replace, when, dialog } from './dom.js';

const POLL_MS = 2000;
/** The outbox's depth: deliveries still to be sent. */
const WAITING = ['pending', 'sending'];
/** Final states: counts of every delivery kept (until retention removes it), not work to do. */
const FINISHED = ['sent', 'dead', 'expired', 'superseded', 'cancelled'];

/** The samples of one metric family from Prometheus text: [{labels, value}]. */
function samples(text, name) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = line.match(/^([a-z_]+)(\{([^}]*)\})?\s+(\S+)/);
    if (!m || m[1] !== name) continue;
    const labels = Object.fromEntries((m[3] || '').split(',').filter(Boolean).map((p) => {
      const [k, v] = p.split('=');
      return [k, (v || '').replace(/^"|"$/g, '')];
    }));
    out.push({ labels, value: Number(m[4]) });
  }
  return out;
}

export function showOps(view) {
  let stopped = false;
  let timer = null;
  let lastDead = '';
  const message = h('p', { class: 'error', role: 'alert' });
  const depth = h('div', { testid: 'outbox-depth' });
  const channels = h('div', { testid: 'channels' });
  const pause = h('p', { testid: 'sending-pause' });
  const hooks = h('p', { class: 'muted', testid: 'webhook-depth' });
  const dead = h('tbody');
  const replayOut = h('p', { class: 'muted', testid: 'replay-result' });
  // The read models `livevisits replay` knows: the visits (the board, a visit's page) and the day by technician.
  const projection = h('select', { testid: 'replay-projection', 'aria-label': 'Projection' },
    h('option', { value: 'visits' }, 'visits'), h('option', { value: 'technicians' }, 'technicians (the day by technician)'));
  const replayButton = h('button', { type: 'button', testid: 'replay', onclick: () => replay() }, 'Replay');

  replace(view,
    h('div', { class: 'toolbar' }, h('h1', {}, 'Operations')), message,
    h('div', { class: 'visit-grid' },
      h('section', { class: 'card' }, h('h2', {}, 'Outbox depth'), depth, pause, hooks),
      h('section', { class: 'card' }, h('h2', {}, 'Projection replay'),
        h('p', { class: 'muted' }, 'Rebuilds a read model from the event log while the API keeps serving. Sends no push.'),
        h('p', { class: 'toolbar' }, projection, replayButton), replayOut),
      h('section', { class: 'card' }, h('h2', {}, 'Broadcast channels'),
        h('p', { class: 'muted small' }, 'The channels the fleet keeps at APNs (iOS 18), by environment and state; an ended one is deleted an hour after its end.'),
        channels)),
    h('section', { class: 'card' }, h('h2', {}, 'Dead letters'),
      h('div', { class: 'table-wrap' }, h('table', { testid: 'dead-letters' },
        h('thead', {}, h('tr', {}, ['Id', 'Visit', 'Kind', 'Attempts', 'Last answer', 'Created', ''].map((t) => h('th', { scope: 'col' }, t)))),
        dead))));

  async function retry(d, button) {
    message.textContent = '';
    const ok = await dialog({ title: `Retry delivery ${d.id}?`, testid: 'confirm', ok: 'Retry',
      lines: [`Sends this ${d.kind} push to the customer's device again now (visit ${d.visitId}). If the cause is not fixed it fails again.`] });
    if (!ok) return;
    button.disabled = true;
    try { await api('POST', `/v1/ops/outbox/${d.id}/retry`); lastDead = ''; refresh(); } catch (e) { message.textContent = explain(e); button.disabled = false; }
  }

  async function replay() {
    const name = projection.value;
    const ok = await dialog({ title: `Replay the ${name} projection?`, testid: 'confirm', ok: 'Replay',
      lines: ['Rebuilds it from the event log. The API keeps serving and no push is sent, but on a large log it takes a while and loads the database.'] });
    if (!ok) return;
    replayButton.disabled = true;
    replayOut.textContent = 'Replaying…';
    try {
      const r = await api('POST', `/v1/ops/projections/${encodeURIComponent(name)}/rebuild`);
      replayOut.textContent = `Replayed ${r.events} events into the ${r.projection} projection (${r.visits} visits) in ${r.seconds} s.`;
    } catch (e) { replayOut.textContent = explain(e); }
    replayButton.disabled = false;
  }

  // Depth: the pushes still to send; the finished deliveries are kept counts, coloured only when not zero.
  function drawDepth(byState) {
    const tile = (s) => {
      const n = byState[s] ?? 0;
      return h('div', { class: 'depth-item ' + s + (n > 0 ? ' some' : ''), 'data-state': s }, h('dt', {}, s), h('dd', {}, String(n)));
    };
    const waiting = WAITING.reduce((sum, s) => sum + (byState[s] ?? 0), 0);
    depth.dataset.depth = String(waiting);
    replace(depth,
      h('p', { class: 'depth-total' }, h('strong', { testid: 'depth-waiting' }, String(waiting)), ` push${waiting === 1 ? '' : 'es'} waiting to be sent`),
      h('dl', { class: 'depth' }, WAITING.map(tile)),
      h('h3', { class: 'small muted' }, 'Finished deliveries kept (until retention removes them)'),
      h('dl', { class: 'depth finished' }, FINISHED.map(tile)));
  }

  function drawChannels(list) {
    replace(channels, list.length === 0 ? h('p', { class: 'muted' }, 'No broadcast channel.')
      : h('table', {}, h('thead', {}, h('tr', {}, ['Environment', 'State', 'Channels'].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', {}, list.map((c) => h('tr', { testid: 'channel-count', 'data-environment': c.labels.environment, 'data-state': c.labels.state },
          h('td', {}, c.labels.environment), h('td', {}, c.labels.state), h('td', {}, String(c.value)))))));
  }

  async function refresh() {
    clearTimeout(timer);
    try {
      const metrics = await fetch('/metrics', { cache: 'no-store' }).then((r) => r.text());
      const byState = Object.fromEntries(samples(metrics, 'livevisits_outbox_deliveries').map((s) => [s.labels.state, s.value]));
      drawDepth(byState);
      drawChannels(samples(metrics, 'livevisits_channels'));
      // Webhooks (when configured) are dead letters like pushes, listed below with kind "webhook".
      const hookStates = samples(metrics, 'livevisits_webhooks').filter((s) => s.value > 0);
      hooks.textContent = hookStates.length === 0 ? '' :
        'Webhooks: ' + hookStates.map((s) => `${s.labels.state} ${s.value}`).join(', ') + '.';
      const sending = await api('GET', '/v1/ops/outbox/pause');
      pause.className = sending.paused ? 'error' : 'muted';
      pause.textContent = sending.paused
        ? `Sending is paused until ${when(sending.until)}: ${sending.reason} (an APNs configuration error; fix it and the pause runs out).`
        : 'Sending is not paused.';
      const { deliveries } = await api('GET', '/v1/ops/outbox?state=dead&limit=100');
      const json = JSON.stringify(deliveries);
      if (json !== lastDead) {
        lastDead = json;
        replace(dead, deliveries.length === 0 ? h('tr', {}, h('td', { colSpan: 7, class: 'muted' }, 'No dead letters.')) :
          deliveries.map((d) => h('tr', { testid: 'dead-letter', 'data-delivery-id': String(d.id) },
            h('td', {}, String(d.id)), h('td', {}, h('a', { href: '#/visit/' + encodeURIComponent(d.visitId) }, d.visitId)),
            h('td', {}, d.kind === 'webhook' ? `webhook ${d.type}` : d.kind), h('td', {}, String(d.attempts)),
            h('td', {}, d.lastStatus === null ? (d.lastReason || '—') : `${d.lastStatus} ${d.lastReason || ''}`), h('td', {}, when(d.createdAt)),
            h('td', {}, h('button', { type: 'button', testid: 'retry', onclick: (e) => retry(d, e.currentTarget) }, 'Retry')))));
      }
      if (message.dataset.kind === 'poll') { message.textContent = ''; delete message.dataset.kind; }
    } catch (e) {
      if (stopped) return;
      message.textContent = explain(e);
      message.dataset.kind = 'poll';
    }
    if (!stopped) timer = setTimeout(refresh, POLL_MS);
  }

  refresh();
  return { stop() { stopped = true; clearTimeout(timer); } };
}
