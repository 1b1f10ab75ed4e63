-- Event-list catch-up: where each provider's list of events was read up to,
-- and which node holds the reading (a lease, so one node reads at a time).
-- The cursor moves only after the listed events are durable in the inbox.
CREATE TABLE provider_cursors (
    provider   TEXT PRIMARY KEY,
    cursor     TEXT,
    holder     TEXT,
    held_until BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

-- How an inbox event came: 'webhook' (pushed) or 'sweep' (read from the
-- provider's event list); the status change it makes records the same.
ALTER TABLE webhook_inbox ADD COLUMN source TEXT NOT NULL DEFAULT 'webhook';
