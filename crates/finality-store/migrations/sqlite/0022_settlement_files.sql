-- Settlement reports a provider announced (Adyen's REPORT_AVAILABLE names
-- a file and the URL to download it from), kept from the verified webhook
-- until the file is downloaded and imported: the webhook is acknowledged
-- only once its announcement is here, so a crash between the two loses
-- nothing. `outcome` is NULL while the file is still to be fetched, then
-- `imported` or `refused`; a failed try counts in `attempts` and is tried
-- again at `next_at`.
CREATE TABLE settlement_files (
    provider     TEXT   NOT NULL,
    name         TEXT   NOT NULL,
    url          TEXT   NOT NULL,
    announced_at BIGINT NOT NULL,
    attempts     BIGINT NOT NULL DEFAULT 0,
    next_at      BIGINT NOT NULL,
    outcome      TEXT,
    detail       TEXT,
    run_id       BIGINT,
    done_at      BIGINT,
    PRIMARY KEY (provider, name)
);
CREATE INDEX settlement_files_due ON settlement_files (provider, next_at)
    WHERE outcome IS NULL;

-- Payments a settlement report made final: that report listed them, so a
-- later report (whose period their finalized_at, the import's time, falls
-- in) does not call them missing.
CREATE INDEX reconciliation_lines_applied ON reconciliation_lines (payment_id)
    WHERE outcome = 'applied';
