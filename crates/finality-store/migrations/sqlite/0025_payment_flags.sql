-- Facts after final (see the PostgreSQL migration 0025).
CREATE TABLE payment_flags (
    id              INTEGER PRIMARY KEY,
    payment_id      TEXT    NOT NULL,
    reason          TEXT    NOT NULL,
    event_id        TEXT,
    provider_status TEXT,
    piece_key       TEXT,
    opened_at       INTEGER NOT NULL,
    closed_at       INTEGER,
    closed_by       TEXT,
    resolution      TEXT
);
CREATE INDEX payment_flags_payment ON payment_flags (payment_id, id);
CREATE INDEX payment_flags_open ON payment_flags (id) WHERE closed_at IS NULL;
