// Outbox
