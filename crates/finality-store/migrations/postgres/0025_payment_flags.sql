-- Facts after final (docs/AMOUNTS.md, "Flags"): a fact that cannot change
-- a payment's final status but needs a person (a capture failure the
-- provider may retry, a failure reported after success, money that does
-- not match) is a flag on the payment, open until a person resolves it
-- (audited) or the provider settles it (the re-capture of the capture it
-- names, `piece_key`).
CREATE TABLE payment_flags (
    id              BIGSERIAL PRIMARY KEY,
    payment_id      TEXT   NOT NULL,
    reason          TEXT   NOT NULL,
    event_id        TEXT,
    provider_status TEXT,
    piece_key       TEXT,
    opened_at       BIGINT NOT NULL,
    closed_at       BIGINT,
    closed_by       TEXT,
    resolution      TEXT
);
CREATE INDEX payment_flags_payment ON payment_flags (payment_id, id);
CREATE INDEX payment_flags_open ON payment_flags (id) WHERE closed_at IS NULL;
