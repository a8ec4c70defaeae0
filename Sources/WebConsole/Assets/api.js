// The public API, with the key from this tab's session storage (never a URL, never local storage).
const KEY = 'livevisits.key';

export class APIError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

/** What the fields of a request are called on screen. */
const FIELD_NAMES = {
  kilometresAway: 'The distance', arrivalWindow: 'The arrival window', 'arrivalWindow.start': 'The arrival time',
  'arrivalWindow.end': 'The end of the arrival window', visitId: 'The visit id', customerId: 'The customer id',
  'attributes.customerFirstName': "The customer's first name", 'attributes.serviceAddress': 'The service address',
  'attributes.jobSummary': 'The job summary', technician: 'The technician', 'technician.id': 'The technician id',
  'technician.name': "The technician's name", 'technician.avatarSymbol': 'The avatar symbol',
  'technician.vanDescription': 'The van', reason: 'The reason', minutes: 'The minutes', type: 'The event',
};

/** The API's error as a sentence for the person at the desk: what happened and what to do, never a field path. */
export function explain(e) {
  if (!(e instanceof APIError)) return String(e && e.message ? e.message : e);
  const field = e.field || (e.message.match(/^([A-Za-z.]+): /) || [])[1];
  const name = FIELD_NAMES[field] || 'A value';
  switch (e.code) {
    case 'network': return 'The server cannot be reached. Check the connection and try again.';
    case 'illegal_transition': return 'That step is not possible from where the visit is now (someone may have just changed it). The board shows its current state.';
    case 'visit_ended': return 'The visit has already ended: it takes no more changes.';
    case 'version_conflict': return 'Someone changed the visit a moment ago. Look at it again, then retry.';
    case 'already_scheduled': return 'A visit with that id already exists: choose another id or leave it empty.';
    case 'invalid_id': return `${name} may only use letters, digits and . _ ~ - (1 to 128 of them).`;
    case 'missing_field': return `${name} is needed.`;
    case 'wrong_type': return `${name} is not in the right form${field === 'kilometresAway' ? ': type a number of kilometres, like 3.4' : ''}.`;
    case 'invalid_value': return `${name} is not accepted: ${e.message.replace(/^[A-Za-z.]+: /, '')}.`;
    case 'push_too_large': return 'The texts are too long to fit in a push to the phone (4 KB): shorten the job summary, address or van.';
    case 'idempotency_key_reused': case 'idempotency_key_in_use': return 'The same request is already being handled. Wait a moment and look again.';
    case 'rate_limited': return 'Too many requests from this key just now. Wait a few seconds and try again.';
    case 'timeout': return 'The server took too long to answer. The change may have been made: look before trying again.';
    case 'not_found': return 'Not found: it does not exist, or this key may not see it.';
    default: break;
  }
  if (e.status === 401) return 'That key is not valid (wrong, revoked or expired).';
  if (e.status === 403) return 'This key may not do that.';
  if (e.status === 404) return 'Not found: it does not exist, or this key may not see it.';
  if (e.status === 413) return 'That is too much text for one request.';
  if (e.status === 503) return 'The server cannot reach its database right now. Try again in a moment.';
  if (e.status === 422) return `${name} is not accepted: ${e.message.replace(/^[A-Za-z.]+: /, '')}.`;
  return e.message;
}

export const session = {
  get key() { return sessionStorage.getItem(KEY); },
  set key(value) { if (value) sessionStorage.setItem(KEY, value); else sessionStorage.removeItem(KEY); },
  role: null,
};

/** Called when the API answers 401 to a signed-in tab (the key was revoked): the tab signs out. */
let onUnauthorized = () => {};
export function whenUnauthorized(handler) { onUnauthorized = handler; }

/** One API call; resolves to the parsed JSON (or null), rejects with an APIError carrying the API's message. */
export async function api(method, path, body, key = session.key, extraHeaders = {}) {
  const headers = { Accept: 'application/json', ...extraHeaders };
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let response;
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
  } catch (e) {
    throw new APIError(0, 'network', 'The server cannot be reached.');
  }
  const text = await response.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = null; }
  if (!response.ok) {
    const err = json && json.error ? json.error : { code: 'http_' + response.status, message: text || response.statusText };
    if (response.status === 401 && key === session.key && session.key) onUnauthorized();
    throw new APIError(response.status, err.code, err.message, err.field);
  }
  return json;
}

/** Finds what a key may do with three cheap reads: 401 = wrong key; deliveries 404 = dispatcher or ops; outbox 200 = ops. */
export async function roleOf(key) {
  await api('GET', '/v1/visits?limit=1', undefined, key);
  const probe = async (path) => {
    try { await api('GET', path, undefined, key); return 200; } catch (e) { if (e.status === 401) throw e; return e.status; }
  };
  if ((await probe('/v1/ops/outbox?limit=1')) === 200) return 'ops';
  if ((await probe('/v1/visits/console-role-probe/deliveries')) === 404) return 'dispatcher';
  return 'technician';
}

/** Reads the board makes on its own (ledger and delivery checks, ledger.js and exceptions.js) share at most ten
 * a second, so a large board never spends the key's rate limit (50 a second by default) that its polls and the
 * dispatcher's clicks need. Resolves when the caller may send its read. */
const BACKGROUND_PER_SECOND = 10;
let nextSlot = 0;
export function backgroundSlot() {
  const now = Date.now();
  const at = Math.max(now, nextSlot);
  nextSlot = at + 1000 / BACKGROUND_PER_SECOND;
  return new Promise((resolve) => { setTimeout(resolve, at - now); });
}
