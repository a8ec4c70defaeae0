// The public API, with the key from this tab's session storage (never a URL, never local storage).
const KEY = 'livevisits.key';

export class APIError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
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
export async function api(method, path, body, key = session.key) {
  const headers = { Accept: 'application/json' };
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
    throw new APIError(response.status, err.code, err.message);
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
