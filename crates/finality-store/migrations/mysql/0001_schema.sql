-- finality schema, MariaDB (10.11+; InnoDB). The final shape of the
-- PostgreSQL migrations 0001..0022 in one file: same tables, same column
-- names and order, same keys, checks, defaults and (where MariaDB has them)
-- index names. Every timestamp is BIGINT milliseconds since the Unix epoch,
-- written by the engine's Clock: SQL never calls now().
--
-- Conventions:
-- * utf8mb4_bin everywhere: ids and refs are compared byte for byte
--   (case-sensitive). utf8mb4_bin is a PAD SPACE collation (trailing spaces
--   are ignored by `=` and by unique keys); ids and refs cannot contain
--   spaces (the engine refuses them), so it makes no difference there.
-- * ROW_FORMAT=DYNAMIC, so an index key may take up to 3072 bytes whatever
--   the server's default row format (utf8mb4: 4 bytes a character).
-- * Text in a key or index is VARCHAR: provider, kind, status and other
--   names 64, ids, refs and account names 255 (what the engine accepts),
--   a rate-limit scope (`provider/account`) 320. Free text is TEXT,
--   payloads JSON (MariaDB: LONGTEXT checked by json_valid), bodies LONGBLOB.
-- * Constraint and index names are PostgreSQL's, except primary keys
--   (MariaDB names each PRIMARY).
-- * PostgreSQL's partial indexes (CREATE INDEX ... WHERE) do not exist in
--   MariaDB: each is commented where it is made.
-- * `cursor` and `lines` are reserved words in MariaDB (`until` is in
--   MySQL): queries must quote them with backticks.
-- * MariaDB DDL commits as it goes: a failure part way leaves the tables
--   made so far (sqlx then reports the migration as failed).

CREATE TABLE payments (
    id            VARCHAR(255) NOT NULL,
    provider      VARCHAR(64)  NOT NULL,
    provider_ref  VARCHAR(255),
    kind          VARCHAR(64)  NOT NULL,
    amount        BIGINT       NOT NULL,
    currency      VARCHAR(16)  NOT NULL,
    metadata      JSON         NOT NULL DEFAULT '{}',
    status        VARCHAR(64)  NOT NULL,
    status_source VARCHAR(64),
    created_at    BIGINT       NOT NULL,
    updated_at    BIGINT       NOT NULL,
    finalized_at  BIGINT,
    merchant_ref  VARCHAR(255),
    account       VARCHAR(255),
    PRIMARY KEY (id),
    CONSTRAINT payments_amount_check CHECK (amount > 0),
    -- A payment registered with only the merchant's reference has no
    -- provider_ref until it is found; at least one of the two is known.
    CONSTRAINT payments_some_ref CHECK (provider_ref IS NOT NULL OR merchant_ref IS NOT NULL),
    UNIQUE INDEX payments_provider_ref (provider, provider_ref),
    -- PostgreSQL: partial, WHERE merchant_ref IS NOT NULL. A MariaDB unique
    -- index never compares NULLs equal, so the plain unique index is the
    -- same constraint (rows without a merchant_ref never conflict).
    UNIQUE INDEX payments_merchant_ref (provider, merchant_ref),
    INDEX payments_status_id (status, id),
    -- Statistics read the payments registered in a window.
    INDEX payments_created_at (created_at),
    -- Final payments in the order retention takes them. PostgreSQL:
    -- partial, WHERE finalized_at IS NOT NULL; here plain (open payments,
    -- finalized_at NULL, are in it too; a range on finalized_at skips them).
    INDEX payments_finalized (finalized_at, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin ROW_FORMAT=DYNAMIC;

-- The hot set: one row per non-final payment, deleted in the transaction
-- that makes its payment final. Claimed rows get next_poll_at = locked_until,
-- so "due now or lease expired" is one range scan of one index.
-- (PostgreSQL's fillfactor and autovacuum settings for this table, 0001 and
-- 0004, have no MariaDB counterpart and are left out.)
CREATE TABLE poll_jobs (
    payment_id    VARCHAR(255) NOT NULL,
    provider      VARCHAR(64)  NOT NULL,
    provider_ref  VARCHAR(255),
    kind          VARCHAR(64)  NOT NULL,
    registered_at BIGINT       NOT NULL,
    attempts      INT          NOT NULL DEFAULT 0,
    next_poll_at  BIGINT,                -- NULL: parked (needs review), polled only on request
    due_at        BIGINT,                -- the next_poll_at the current claim was made for
    locked_by     VARCHAR(255),
    locked_until  BIGINT,
    lock_token    BIGINT,
    last_error    TEXT,
    -- Status queries that failed in a row without an answer.
    errors        INT          NOT NULL DEFAULT 0,
    merchant_ref  VARCHAR(255),
    -- While an early look is pending: when the job was due by its schedule.
    resume_at     BIGINT,
    early_looks   INT          NOT NULL DEFAULT 0,
    -- The lane a job is claimed in; '' is the provider's own (no account).
    account       VARCHAR(255) NOT NULL DEFAULT '',
    PRIMARY KEY (payment_id),
    CONSTRAINT poll_jobs_payment_id_fkey FOREIGN KEY (payment_id)
        REFERENCES payments (id) ON DELETE CASCADE,
    -- PostgreSQL: partial, WHERE next_poll_at IS NOT NULL; here plain
    -- (parked jobs, NULL, are in it; a range on next_poll_at skips them).
    INDEX poll_jobs_due (next_poll_at),
    -- PostgreSQL: partial, WHERE next_poll_at IS NOT NULL; here plain, as
    -- poll_jobs_due.
    INDEX poll_jobs_lane_due (provider, account, next_poll_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin ROW_FORMAT=DYNAMIC;

CREATE TABLE status_history (
    id          BIGINT       NOT NULL AUTO_INCREMENT,
    payment_id  VARCHAR(255) NOT NULL,
    from_status VARCHAR(64),
    to_status   VARCHAR(64)  NOT NULL,
    source      VARCHAR(64)  NOT NULL,
    event_id    VARCHAR(255),
    reason      TEXT,
    actor       TEXT,
    observed_at BIGINT       NOT NULL,
    at          BIGINT       NOT NULL,
    PRIMARY KEY (id),
    -- Also the index the foreign key below needs.
    INDEX status_history_payment (payment_id, id),
    CONSTRAINT status_history_payment_id_fkey FOREIGN KEY (payment_id)
        REFERENCES payments (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin ROW_FORMAT=DYNAMIC;

-- One row per provider call. PostgreSQL's retention may turn this table into
-- day partitions (at run time, not in its migrations); on MariaDB it stays
-- one table and retention deletes in batches.
CREATE TABLE poll_attempts (
    id              BIGINT       NOT NULL AUTO_INCREMENT,
    payment_id      VARCHAR(255) NOT NULL,
    provider        VARCHAR(64)  NOT NULL,
    worker          VARCHAR(255) NOT NULL,
    started_at      BIGINT       NOT NULL,
    latency_ms      BIGINT       NOT NULL,
    outcome         VARCHAR(64)  NOT NULL,  -- observed status, 'unknown' or 'error'
    provider_status TEXT,
    error_class     VARCHAR(64),
    error           TEXT,
    PRIMARY KEY (id),
    INDEX poll_attempts_payment (payment_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin ROW_FORMAT=DYNAMIC;

-- Events out. `outbox.id` is handed out before commit, so transactions
-- commit out of id order; feed positions (`feed_seq`) are assigned after
-- commit, by one sequencer at a time (it holds the `feed_state` row lock).
CREATE TABLE outbox (
    id              BIGINT       NOT NULL AUTO_INCREMENT,
    event_id        VARCHAR(255) NOT NULL,
    payment_id      VARCHAR(255) NOT NULL,
    type            VARCHAR(64)  NOT NULL,
    status          VARCHAR(64)  NOT NULL,
    previous_status VARCHAR(64),
    source          VARCHAR(64)  NOT NULL,
    occurred_at     BIGINT       NOT NULL,
    feed_seq        BIGINT,
    PRIMARY KEY (id),
    CONSTRAINT outbox_event_id_key UNIQUE (event_id),
    INDEX outbox_payment (payment_id, id),
    -- PostgreSQL: a partial unique index. Here not unique: InnoDB checks a
    -- unique index by locking its neighbours, so the sequencer numbering
    -- committed rows (holding feed_state) would wait on the NULL entries of
    -- rows other transactions are inserting, while those wait for
    -- feed_state to number their own: a deadlock. Positions are unique
    -- because one sequencer at a time holds feed_state's row lock.
    -- (feed_seq, id) also reaches the unsequenced rows (feed_seq IS NULL is
    -- a key value here) in id order, which PostgreSQL's partial
    -- outbox_unsequenced (id) WHERE feed_seq IS NULL does.
    INDEX outbox_feed_seq (feed_seq, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin ROW_FORMAT=DYNAMIC;

-- (PostgreSQL's finality_register_payment function is the procedure of
-- migration 0002 here; its NOTIFY has no MariaDB counterpart.)

-- Webhooks in: every verified event, durable before the provider gets its 2xx.
-- "Insert if absent" is decided by the unique constraint, never by a read.
CREATE TABLE webhook_inbox (
    id                BIGINT       NOT NULL AUTO_INCREMENT,
    provider          VARCHAR(64)  NOT NULL,
    event_id          VARCHAR(255) NOT NULL,
    provider_ref      VARCHAR(255),
    observed_status   VARCHAR(64),          -- mapped; NULL when the provider status is unknown
    provider_status   TEXT,
    occurred_at       BIGINT,
    raw_body          LONGBLOB     NOT NULL,
    headers           JSON         NOT NULL DEFAULT '{}',
    received_at       BIGINT       NOT NULL,
    state             VARCHAR(64)  NOT NULL, -- received | applied | ignored | orphaned | failed
    reason            TEXT,                  -- why ignored, or the error of the last failure
    attempts          INT          NOT NULL DEFAULT 0,
    next_attempt_at   BIGINT,                -- when received/failed rows are (re)processed
    processed_at      BIGINT,
    merchant_ref      VARCHAR(255),
    -- 'webhook' (pushed) or 'sweep' (read from the provider's event list).
    source            VARCHAR(64)  NOT NULL DEFAULT 'webhook',
    -- When the raw body and headers were dropped (archived first).
    body_dropped_at   BIGINT,
    -- The money the event names, as the provider reported it.
    reported_amount   BIGINT,
    reported_currency TEXT,
    PRIMARY KEY (id),
    CONSTRAINT webhook_inbox_provider_event_id_key UNIQUE (provider, event_id),
    -- PostgreSQL: partial, WHERE state IN ('received', 'failed'); here plain
    -- (processed rows have next_attempt_at NULL, which a range skips).
    INDEX webhook_inbox_due (next_attempt_at),
    -- A payment's webhooks by the provider's reference; serves the orphan
    -- lookups too (PostgreSQL 0011 replaced webhook_inbox_orphans with it).
    INDEX webhook_inbox_payment_ref (provider, provider_ref),
    -- PostgreSQL: (provider, merchant_ref) WHERE state = 'orphaned' AND
    -- merchant_ref IS NOT NULL. Made plain on the same columns it would be a
    -- second copy of webhook_inbox_merchant_only; with state after provider
    -- it reaches a provider's orphans, then by merchant reference.
    INDEX webhook_inbox_orphans_merchant (provider, state, merchant_ref),
    -- PostgreSQL: partial, WHERE provider_ref IS NULL; here plain (every
    -- row with a merchant reference is in it).
    INDEX webhook_inbox_merchant_only (provider, merchant_ref),
    -- The console lists failed and orphaned rows, newest first. PostgreSQL:
    -- partial, WHERE state IN ('failed', 'orphaned'); here plain (state
    -- leads, so the other states are never read).
    INDEX webhook_inbox_trouble (state, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin ROW_FORMAT=DYNAMIC;

CREATE TABLE feed_state (
    id       INT    NOT NULL,
    last_seq BIGINT NOT NULL,
    PRIMARY KEY (id),
    CONSTRAINT feed_state_id_check CHECK (id = 1)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin ROW_FORMAT=DYNAMIC;
INSERT INTO feed_state (id, last_seq) VALUES (1, 0);

-- (PostgreSQL's finality_sequence_feed and finality_sequence_feed_rows
-- functions, 0015 and 0017, and their NOTIFY are PostgreSQL only: left out.)

-- One cursor per push destination: every event at or below `delivered_seq`
-- has been delivered, in feed order.
CREATE TABLE event_destinations (
    name            VARCHAR(255) NOT NULL,
    delivered_seq   BIGINT       NOT NULL DEFAULT 0,
    attempts        INT          NOT NULL DEFAULT 0,  -- failed tries of the head event
    failing_since   BIGINT,
    next_attempt_at BIGINT,
    last_error      TEXT,
    paused_at       BIGINT,
    paused_by       TEXT,
    PRIMARY KEY (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin ROW_FORMAT=DYNAMIC;

-- One row per event push. Day partitions on PostgreSQL (at run time); one
-- table here, as poll_attempts.
CREATE TABLE delivery_attempts (
    id          BIGINT       NOT NULL AUTO_INCREMENT,
    destination VARCHAR(255) NOT NULL,
    event_id    VARCHAR(255) NOT NULL,
    feed_seq    BIGINT       NOT NULL,
    at          BIGINT       NOT NULL,
    status_code INT,
    latency_ms  BIGINT       NOT NULL,
    error       TEXT,
    PRIMARY KEY (id),
    INDEX delivery_attempts_destination (destination, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin ROW_FORMAT=DYNAMIC;

-- One token bucket per rate-limited provider or account (its scope,
-- `provider` or `provider/account`), shared by every node.
CREATE TABLE rate_buckets (
    provider   VARCHAR(320) NOT NULL,
    tokens     DOUBLE       NOT NULL,
    updated_at BIGINT       NOT NULL,
    PRIMARY KEY (provider)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin ROW_FORMAT=DYNAMIC;

-- Event-list catch-up and other leases (`finality:sweep`,
-- `settlement/<provider>`, ...): where each was read up to and which node
-- holds it.
CREATE TABLE provider_cursors (
    provider   VARCHAR(320) NOT NULL,
    `cursor`   TEXT,
    holder     VARCHAR(255),
    held_until BIGINT       NOT NULL,
    updated_at BIGINT       NOT NULL,
    PRIMARY KEY (provider)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin ROW_FORMAT=DYNAMIC;

-- Live engine nodes, each with its heartbeat.
CREATE TABLE nodes (
    worker_id    VARCHAR(255) NOT NULL,
    started_at   BIGINT       NOT NULL,
    heartbeat_at BIGINT       NOT NULL,
    PRIMARY KEY (worker_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin ROW_FORMAT=DYNAMIC;

-- Every manual action, with who did it, from where and what came of it.
-- Append-only.
CREATE TABLE audit_log (
    id          BIGINT       NOT NULL AUTO_INCREMENT,
    at          BIGINT       NOT NULL,
    actor       TEXT         NOT NULL,  -- the API token's name, never the caller's say-so
    role        VARCHAR(64)  NOT NULL,
    action      VARCHAR(64)  NOT NULL,  -- resolve | poll_now | sign_in | ...
    payment_id  VARCHAR(255),
    detail      JSON         NOT NULL,
    outcome     TEXT         NOT NULL,
    remote_addr TEXT,
    PRIMARY KEY (id),
    -- PostgreSQL: partial, WHERE payment_id IS NOT NULL; here plain
    -- (actions without a payment sit together under NULL).
    INDEX audit_log_payment (payment_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin ROW_FORMAT=DYNAMIC;

-- One row per run of the reconciliation sweep.
CREATE TABLE sweep_runs (
    id            BIGINT       NOT NULL AUTO_INCREMENT,
    holder        VARCHAR(255) NOT NULL,
    started_at    BIGINT       NOT NULL,
    finished_at   BIGINT       NOT NULL,
    scanned       BIGINT       NOT NULL,
    pass_complete BIGINT       NOT NULL,
    findings      JSON         NOT NULL,
    repaired      BIGINT       NOT NULL,
    PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin ROW_FORMAT=DYNAMIC;

-- Settlement reports imported and checked line by line, known by provider
-- and the SHA-256 (hex) of their bytes.
CREATE TABLE reconciliation_runs (
    id          BIGINT       NOT NULL AUTO_INCREMENT,
    provider    VARCHAR(64)  NOT NULL,
    file_name   TEXT         NOT NULL,
    sha256      VARCHAR(255) NOT NULL, -- the hash, and the period when checked against one
    started_at  BIGINT       NOT NULL,
    finished_at BIGINT,
    `lines`     BIGINT       NOT NULL DEFAULT 0,
    counts      JSON         NOT NULL,
    -- When an import last showed it was alive.
    alive_at    BIGINT,
    PRIMARY KEY (id),
    CONSTRAINT reconciliation_runs_provider_sha256_key UNIQUE (provider, sha256)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin ROW_FORMAT=DYNAMIC;

-- Every line that did not simply match, with what became of it.
CREATE TABLE reconciliation_lines (
    run_id       BIGINT       NOT NULL,
    line         BIGINT       NOT NULL,
    kind         VARCHAR(64)  NOT NULL,
    provider_ref TEXT,
    amount       BIGINT       NOT NULL,
    currency     TEXT         NOT NULL,
    outcome      VARCHAR(64)  NOT NULL,
    reason       TEXT         NOT NULL,
    payment_id   VARCHAR(255),
    PRIMARY KEY (run_id, line),
    CONSTRAINT reconciliation_lines_run_id_fkey FOREIGN KEY (run_id)
        REFERENCES reconciliation_runs (id),
    -- Payments a settlement report made final. PostgreSQL: partial, WHERE
    -- outcome = 'applied'; here plain (a payment's lines are few).
    INDEX reconciliation_lines_applied (payment_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin ROW_FORMAT=DYNAMIC;

-- The payments a report being imported listed (scratch: a run's rows are
-- deleted when it finishes). UNLOGGED on PostgreSQL; MariaDB has no
-- unlogged InnoDB table, so it is an ordinary one.
CREATE TABLE reconciliation_seen (
    run_id     BIGINT       NOT NULL,
    payment_id VARCHAR(255) NOT NULL,
    PRIMARY KEY (run_id, payment_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin ROW_FORMAT=DYNAMIC;

-- A final payment archived and deleted keeps one small row here.
CREATE TABLE archived_payments (
    id           VARCHAR(255) NOT NULL,
    provider     VARCHAR(64)  NOT NULL,
    provider_ref VARCHAR(255),
    merchant_ref VARCHAR(255),
    status       VARCHAR(64)  NOT NULL,
    finalized_at BIGINT       NOT NULL,
    archived_at  BIGINT       NOT NULL,
    archive      TEXT         NOT NULL,  -- the file, relative to the archive directory
    PRIMARY KEY (id),
    INDEX archived_payments_ref (provider, provider_ref),
    INDEX archived_payments_merchant_ref (provider, merchant_ref)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin ROW_FORMAT=DYNAMIC;

-- Days brought back by `finality archive restore`, kept from retention
-- until `until`.
CREATE TABLE archive_holds (
    kind    VARCHAR(64) NOT NULL,
    day     VARCHAR(16) NOT NULL,  -- YYYY-MM-DD, UTC
    `until` BIGINT      NOT NULL,
    PRIMARY KEY (kind, day)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin ROW_FORMAT=DYNAMIC;

-- Where retention's scans have reached.
CREATE TABLE lifecycle_cursors (
    kind     VARCHAR(64) NOT NULL,
    after_id BIGINT      NOT NULL,
    PRIMARY KEY (kind)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin ROW_FORMAT=DYNAMIC;

-- One event sent again to one destination, asked for by an admin; the
-- pending ones have done_at NULL.
CREATE TABLE event_redeliveries (
    id           BIGINT       NOT NULL AUTO_INCREMENT,
    destination  VARCHAR(255) NOT NULL,
    event_id     VARCHAR(255) NOT NULL,
    requested_at BIGINT       NOT NULL,
    requested_by TEXT         NOT NULL,
    done_at      BIGINT,
    outcome      TEXT,
    PRIMARY KEY (id),
    -- PostgreSQL: (destination, id) WHERE done_at IS NULL. Plain on those
    -- columns, each pusher round would read a destination's whole history of
    -- done redeliveries; with done_at between them it reads only the pending
    -- ones (done_at IS NULL is a key value here), in id order.
    INDEX event_redeliveries_pending (destination, done_at, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin ROW_FORMAT=DYNAMIC;

-- Accounts added at run time. `spec` holds only names of environment
-- variables and files, never a secret.
CREATE TABLE provider_accounts (
    provider    VARCHAR(64)  NOT NULL,
    account     VARCHAR(255) NOT NULL,
    spec        JSON         NOT NULL,
    disabled_at BIGINT,
    created_at  BIGINT       NOT NULL,
    updated_at  BIGINT       NOT NULL,
    updated_by  TEXT         NOT NULL,
    PRIMARY KEY (provider, account)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin ROW_FORMAT=DYNAMIC;

-- Settlement reports a provider announced, kept until downloaded and
-- imported. `outcome` is NULL while the file is still to be fetched.
CREATE TABLE settlement_files (
    provider     VARCHAR(64)  NOT NULL,
    name         VARCHAR(255) NOT NULL,
    url          TEXT         NOT NULL,
    announced_at BIGINT       NOT NULL,
    attempts     BIGINT       NOT NULL DEFAULT 0,
    next_at      BIGINT       NOT NULL,
    outcome      VARCHAR(64),
    detail       TEXT,
    run_id       BIGINT,
    done_at      BIGINT,
    PRIMARY KEY (provider, name),
    -- PostgreSQL: (provider, next_at) WHERE outcome IS NULL. Plain on those
    -- columns, every round would read all of a provider's done files (their
    -- next_at is past); with outcome between them only the files still to
    -- fetch (outcome IS NULL is a key value here), by next_at.
    INDEX settlement_files_due (provider, outcome, next_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin ROW_FORMAT=DYNAMIC;
