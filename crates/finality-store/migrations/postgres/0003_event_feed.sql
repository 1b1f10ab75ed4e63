-- Events out. `outbox.id` comes from a sequence handed out before commit, so
-- transactions commit out of id order and a reader paging by id would skip a
-- late commit. Feed positions (`feed_seq`) are instead assigned after commit,
-- by one sequencer at a time (it holds the `feed_state` row lock), to rows it
-- can already see: a position is never given to a row that commits later
-- than a row with a higher position, so `feed_seq > cursor` never skips.
ALTER TABLE outbox ADD COLUMN feed_seq BIGINT;
CREATE UNIQUE INDEX outbox_feed_seq ON outbox (feed_seq) WHERE feed_seq IS NOT NULL;
CREATE INDEX outbox_unsequenced ON outbox (id) WHERE feed_seq IS NULL;

CREATE TABLE feed_state (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    last_seq BIGINT NOT NULL
);
INSERT INTO feed_state (id, last_seq) VALUES (1, 0);

-- One cursor per push destination (an HTTP endpoint, NATS): every event at
-- or below `delivered_seq` has been delivered, in feed order.
CREATE TABLE event_destinations (
    name            TEXT PRIMARY KEY,
    delivered_seq   BIGINT  NOT NULL DEFAULT 0,
    attempts        INTEGER NOT NULL DEFAULT 0,  -- failed tries of the head event
    failing_since   BIGINT,
    next_attempt_at BIGINT,
    last_error      TEXT
);

CREATE TABLE delivery_attempts (
    id          BIGSERIAL PRIMARY KEY,
    destination TEXT   NOT NULL,
    event_id    TEXT   NOT NULL,
    feed_seq    BIGINT NOT NULL,
    at          BIGINT NOT NULL,
    status_code INTEGER,
    latency_ms  BIGINT NOT NULL,
    error       TEXT
);
CREATE INDEX delivery_attempts_destination ON delivery_attempts (destination, id);
