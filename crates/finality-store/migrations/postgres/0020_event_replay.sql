-- Replay and redelivery (docs/EVENTS.md). A paused destination gets no
-- attempts and raises no alert; its cursor stays where it was, so its
-- backlog (the feed head minus the cursor) is kept and shown. Who paused it
-- is written here as well as in the audit log, for the console to show.
ALTER TABLE event_destinations ADD COLUMN paused_at BIGINT;
ALTER TABLE event_destinations ADD COLUMN paused_by TEXT;

-- One event sent again to one destination, asked for by an admin: the
-- pusher of that destination takes the pending ones (`done_at IS NULL`)
-- between its rounds and records what came of each.
CREATE TABLE event_redeliveries (
    id           BIGSERIAL PRIMARY KEY,
    destination  TEXT   NOT NULL,
    event_id     TEXT   NOT NULL,
    requested_at BIGINT NOT NULL,
    requested_by TEXT   NOT NULL,
    done_at      BIGINT,
    outcome      TEXT
);
CREATE INDEX event_redeliveries_pending ON event_redeliveries (destination, id)
    WHERE done_at IS NULL;

-- Rewinding to a time scans the outbox (kept only for the retention), on
-- purpose without an index on `occurred_at`: it would cost every
-- transition a write for an action taken by hand, rarely.
