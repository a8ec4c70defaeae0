-- Contract §9, fallback notifications: a customer's device may register its ordinary APNs token, and a
-- device without a Live Activity of the visit (or with Live Activities off) gets an ordinary alert on each
-- status change that has a `fallbackAlert`.

-- A device's ordinary notification token, one per device (retired like the other tokens).
CREATE TABLE notification_tokens (
    customer_id        text    NOT NULL,
    device_id          text    NOT NULL,
    push_token         text    NOT NULL,
    environment        text    NOT NULL CHECK (environment IN ('sandbox', 'production')),
    registered_at_ms   bigint  NOT NULL,
    retired_at_ms      bigint,
    retired_reason     text,
    PRIMARY KEY (customer_id, device_id)
);

-- A delivery may be an ordinary notification (`alert`, target `alert["<visit>","<customer>","<device>"]`).
ALTER TABLE deliveries DROP CONSTRAINT deliveries_kind_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_kind_check CHECK (kind IN ('start', 'update', 'end', 'alert'));
