-- finality schema, PostgreSQL. Every timestamp is BIGINT milliseconds since
-- the Unix epoch, written by the engine's Clock: SQL never calls now().

CREATE TABLE payments (
    id            TEXT PRIMARY KEY,
    provider      TEXT   NOT NULL,
    provider_ref  TEXT   NOT NULL,
    kind          TEXT   NOT NULL,
    amount        BIGINT NOT NULL CHECK (amount > 0),
    currency      TEXT   NOT NULL,
    metadata      JSONB  NOT NULL DEFAULT '{}'::jsonb,
    status        TEXT   NOT NULL,
    status_source TEXT,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    finalized_at  BIGINT
);
CREATE UNIQUE INDEX payments_provider_ref ON payments (provider, provider_ref);
CREATE INDEX payments_status_id ON payments (status, id);

-- The hot set: one row per non-final payment, deleted in the transaction
-- that makes its payment final. Claimed rows get next_poll_at = locked_until,
-- so "due now or lease expired" is one range scan of one index.
CREATE TABLE poll_jobs (
    payment_id    TEXT PRIMARY KEY REFERENCES payments (id) ON DELETE CASCADE,
    provider      TEXT    NOT NULL,
    provider_ref  TEXT    NOT NULL,
    kind          TEXT    NOT NULL,
    registered_at BIGINT  NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    next_poll_at  BIGINT,            -- NULL: parked (needs review), polled only on request
    due_at        BIGINT,            -- the next_poll_at the current claim was made for
    locked_by     TEXT,
    locked_until  BIGINT,
    lock_token    BIGINT,
    last_error    TEXT
) WITH (fillfactor = 70);
CREATE INDEX poll_jobs_due ON poll_jobs (next_poll_at) WHERE next_poll_at IS NOT NULL;

CREATE TABLE status_history (
    id          BIGSERIAL PRIMARY KEY,
    payment_id  TEXT   NOT NULL REFERENCES payments (id),
    from_status TEXT,
    to_status   TEXT   NOT NULL,
    source      TEXT   NOT NULL,
    event_id    TEXT,
    reason      TEXT,
    actor       TEXT,
    observed_at BIGINT NOT NULL,
    at          BIGINT NOT NULL
);
CREATE INDEX status_history_payment ON status_history (payment_id, id);

CREATE TABLE poll_attempts (
    id              BIGSERIAL PRIMARY KEY,
    payment_id      TEXT   NOT NULL,
    provider        TEXT   NOT NULL,
    worker          TEXT   NOT NULL,
    started_at      BIGINT NOT NULL,
    latency_ms      BIGINT NOT NULL,
    outcome         TEXT   NOT NULL,  -- observed status, 'unknown' or 'error'
    provider_status TEXT,
    error_class     TEXT,
    error           TEXT
);
CREATE INDEX poll_attempts_payment ON poll_attempts (payment_id, id);

CREATE TABLE outbox (
    id              BIGSERIAL PRIMARY KEY,
    event_id        TEXT   NOT NULL UNIQUE,
    payment_id      TEXT   NOT NULL,
    type            TEXT   NOT NULL,
    status          TEXT   NOT NULL,
    previous_status TEXT,
    source          TEXT   NOT NULL,
    occurred_at     BIGINT NOT NULL
);
CREATE INDEX outbox_payment ON outbox (payment_id, id);

-- Transactional enqueue from any language: call inside your own transaction
-- and the payment and its first poll commit or roll back with your data.
-- Returns 'created' or 'exists' (same body); a different body raises 23505.
-- p_now_ms defaults to this server's clock, the one place SQL reads time,
-- because a caller outside Rust has no finality Clock to pass.
CREATE FUNCTION finality_register_payment(
    p_id                  TEXT,
    p_provider            TEXT,
    p_provider_ref        TEXT,
    p_amount              BIGINT,
    p_currency            TEXT,
    p_kind                TEXT   DEFAULT 'payment',
    p_metadata            JSONB  DEFAULT '{}'::jsonb,
    p_first_poll_delay_ms BIGINT DEFAULT 1000,
    p_now_ms              BIGINT DEFAULT (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT
) RETURNS TEXT LANGUAGE plpgsql AS $$
DECLARE
    existing payments%ROWTYPE;
BEGIN
    IF p_id IS NULL OR p_id !~ '^[!-.0-~]{1,255}$' THEN
        RAISE EXCEPTION 'finality: id must be 1 to 255 printable ASCII characters without spaces or /'
            USING ERRCODE = '22023';
    END IF;
    IF p_provider_ref IS NULL OR p_provider_ref !~ '^[!-.0-~]{1,255}$' THEN
        RAISE EXCEPTION 'finality: provider_ref must be 1 to 255 printable ASCII characters without spaces or /'
            USING ERRCODE = '22023';
    END IF;
    IF p_amount IS NULL OR p_amount <= 0 THEN
        RAISE EXCEPTION 'finality: amount must be a positive integer number of minor units'
            USING ERRCODE = '22023';
    END IF;
    IF p_currency IS NULL OR p_currency !~ '^[A-Z]{3}$' THEN
        RAISE EXCEPTION 'finality: currency must be an ISO 4217 code (three upper-case letters)'
            USING ERRCODE = '22023';
    END IF;
    IF p_kind NOT IN ('payment', 'refund', 'payout') THEN
        RAISE EXCEPTION 'finality: kind must be payment, refund or payout' USING ERRCODE = '22023';
    END IF;

    INSERT INTO payments (id, provider, provider_ref, kind, amount, currency, metadata,
                          status, created_at, updated_at)
    VALUES (p_id, p_provider, p_provider_ref, p_kind, p_amount, p_currency,
            COALESCE(p_metadata, '{}'::jsonb), 'pending', p_now_ms, p_now_ms)
    ON CONFLICT (id) DO NOTHING;
    IF FOUND THEN
        INSERT INTO poll_jobs (payment_id, provider, provider_ref, kind, registered_at, next_poll_at)
        VALUES (p_id, p_provider, p_provider_ref, p_kind, p_now_ms, p_now_ms + p_first_poll_delay_ms);
        PERFORM pg_notify('finality_jobs', '');
        RETURN 'created';
    END IF;

    SELECT * INTO existing FROM payments WHERE id = p_id;
    IF existing.provider = p_provider AND existing.provider_ref = p_provider_ref
       AND existing.kind = p_kind AND existing.amount = p_amount
       AND existing.currency = p_currency
       AND existing.metadata = COALESCE(p_metadata, '{}'::jsonb) THEN
        RETURN 'exists';
    END IF;
    RAISE EXCEPTION 'finality: payment % is already registered with a different body', p_id
        USING ERRCODE = '23505';
END
$$;
