// The transition table of contract §4: which event is legal from which status.
export const ENDED = ['completed', 'cancelled', 'failed'];
const ACTIVE = ['scheduled', 'enRoute', 'nearby', 'onSite', 'finishing'];

export const LEGAL_FROM = {
  enRoute: ['scheduled'],
  nearby: ['scheduled', 'enRoute'],
  onSite: ['scheduled', 'enRoute', 'nearby'],
  finishing: ['onSite'],
  completed: ['onSite', 'finishing'],
  progress: ACTIVE,
  reassigned: ['scheduled', 'enRoute', 'nearby'],
  cancelled: ACTIVE,
  failed: ACTIVE,
};

// Technicians may post these; cancelled and reassigned are the dispatcher's (§6).
const TECHNICIAN_EVENTS = ['enRoute', 'nearby', 'onSite', 'finishing', 'completed', 'failed', 'progress'];

export const STATUSES = [...ACTIVE, ...ENDED];

export const LABELS = {
  scheduled: 'Scheduled', enRoute: 'En route', nearby: 'Nearby', onSite: 'On site', finishing: 'Finishing',
  completed: 'Completed', cancelled: 'Cancelled', failed: 'Failed', progress: 'Progress', reassigned: 'Reassign',
};

/** What an event's button says. */
export const ACTIONS = {
  enRoute: 'En route', nearby: 'Nearby', onSite: 'On site', finishing: 'Finishing', completed: 'Complete',
  progress: 'Progress…', reassigned: 'Reassign…', cancelled: 'Cancel…', failed: 'Fail…',
};

/** The events a caller of `role` may post to a visit in `status`, in the table's order. */
export function legalEvents(status, role) {
  return Object.keys(LEGAL_FROM).filter((type) =>
    LEGAL_FROM[type].includes(status) &&
    (role === 'dispatcher' || (role === 'technician' && TECHNICIAN_EVENTS.includes(type))));
}

export function isEnded(status) { return ENDED.includes(status); }

/**
 * The alert a status's push carries to the customer's phone (sound and banner), as the shipped rules
 * (Projections/rules.json, `statuses.<status>.alert`) word it in their default language. The console asks
 * before posting these events and shows this text; the others post without asking.
 */
export const ALERTS = {
  nearby: { title: 'Service visit', body: 'Your technician is a few minutes away.' },
  onSite: { title: 'Service visit', body: 'Your technician has arrived.' },
};
