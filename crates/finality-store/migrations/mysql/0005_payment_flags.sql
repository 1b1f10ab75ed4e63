-- Facts after final (see the PostgreSQL migration 0025). No partial index:
-- open flags are found by (closed_at, id).
CREATE TABLE payment_flags (
    id              BIGINT       NOT NULL AUTO_INCREMENT,
    payment_id      VARCHAR(255) NOT NULL,
    reason          TEXT         NOT NULL,
    event_id        TEXT,
    provider_status TEXT,
    piece_key       VARCHAR(255),
    opened_at       BIGINT       NOT NULL,
    closed_at       BIGINT,
    closed_by       TEXT,
    resolution      TEXT,
    PRIMARY KEY (id),
    INDEX payment_flags_payment (payment_id, id),
    INDEX payment_flags_open (closed_at, id)
);
