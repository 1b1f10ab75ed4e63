-- Settlement reports imported and checked line by line. A report is known
-- by its provider and the SHA-256 of its bytes: importing the same file
-- again finds the run and changes nothing. A run left unfinished (the
-- process died) is done again from the start on the next import; every
-- status change it makes goes through `apply`, which is idempotent.
CREATE TABLE reconciliation_runs (
    id          INTEGER   PRIMARY KEY,
    provider    TEXT   NOT NULL,
    file_name   TEXT   NOT NULL,
    sha256      TEXT   NOT NULL,
    started_at  BIGINT NOT NULL,
    finished_at BIGINT,
    lines       BIGINT NOT NULL DEFAULT 0,
    counts      TEXT      NOT NULL,
    UNIQUE (provider, sha256)
);
-- Every line that did not simply match, with what became of it.
CREATE TABLE reconciliation_lines (
    run_id       BIGINT NOT NULL REFERENCES reconciliation_runs (id),
    line         BIGINT NOT NULL,
    kind         TEXT   NOT NULL,
    provider_ref TEXT,
    amount       BIGINT NOT NULL,
    currency     TEXT   NOT NULL,
    outcome      TEXT   NOT NULL,
    reason       TEXT   NOT NULL,
    payment_id   TEXT,
    PRIMARY KEY (run_id, line)
);
