// The console's shell: sign-in, sign-out, and the hash routes #/board, #/visit/<id>, #/ops.
import { api, roleOf, session, whenUnauthorized } from './api.js';
import { showBoard } from './board.js';
import { showVisit } from './visit.js';
import { showOps } from './ops.js';
import { showTechnician, showTechnicianOf } from './technician.js';
import { replace } from './dom.js';

const $ = (id) => document.getElementById(id);
let current = null; // the page on screen: { stop() }

function stopPage() {
  if (current && current.stop) current.stop();
  current = null;
}

/** Shows the sign-in form; `forget` (a real sign-out, not a first visit) also drops the page the previous person
 * was on, so the next sign-in starts at the board rather than on their visit. */
function signOut(message, forget = false) {
  stopPage();
  if (forget) history.replaceState(null, '', location.pathname + location.search);
  session.key = null;
  session.role = null;
  sessionStorage.removeItem('livevisits.role');
  $('nav').hidden = true;
  replace($('view'));
  $('signin-view').hidden = false;
  $('signin-error').textContent = message || '';
  $('signin-key').value = '';
  $('signin-key').focus();
}

async function route() {
  stopPage();
  if (!session.key) { signOut(); return; }
  $('signin-view').hidden = true;
  $('nav').hidden = false;
  $('nav-ops').hidden = session.role !== 'ops';
  $('whoami').textContent = `Signed in as ${session.role}`;
  const view = $('view');
  const [hash, query] = (location.hash || '#/board').split('?');
  const params = new URLSearchParams(query || '');
  const visit = hash.match(/^#\/visit\/(.+)$/);
  const technician = hash.match(/^#\/technician\/(.+)$/);
  const technicianOf = hash.match(/^#\/technician-of\/(.+)$/);
  if (visit) current = showVisit(view, decodeURIComponent(visit[1]));
  else if (technician) current = showTechnician(view, decodeURIComponent(technician[1]), params.get('date'));
  else if (technicianOf) current = showTechnicianOf(view, decodeURIComponent(technicianOf[1]));
  else if (hash === '#/ops' && session.role === 'ops') current = showOps(view);
  else current = showBoard(view, params);
}

whenUnauthorized(() => signOut('Your key is no longer accepted. Sign in again.', true));

$('signin-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const key = $('signin-key').value.trim();
  const error = $('signin-error');
  error.textContent = '';
  try {
    const role = await roleOf(key);
    session.key = key;
    session.role = role;
    sessionStorage.setItem('livevisits.role', role);
    $('signin-key').value = '';
    if (!location.hash) location.hash = '#/board';
    await route();
  } catch (e) {
    error.textContent = e.status === 401 ? 'That key is not valid (wrong, revoked or expired).' : e.message;
  }
});

$('signout').addEventListener('click', () => signOut('', true));
window.addEventListener('hashchange', () => { if (session.key) route(); });

session.role = sessionStorage.getItem('livevisits.role');
if (session.key && session.role) route(); else signOut();

export { api };
