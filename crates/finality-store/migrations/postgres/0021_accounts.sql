-- Accounts of a provider: a Stripe Connect platform's connected accounts,
-- an Adyen company's merchant accounts, a WeChat Pay service provider's
-- sub-merchants, an integrator's Alipay apps. A payment may name one
-- (`account`); its polls are then made as that account, under that
-- account's rate limit, pause and breaker.
ALTER TABLE payments ADD COLUMN account TEXT;

-- The lane a job is claimed in: the claim shares each round between the
-- (provider, account) lanes with due work, so one account's backlog delays
-- its own polls, not another's. '' is the provider's own (no account).
ALTER TABLE poll_jobs ADD COLUMN account TEXT NOT NULL DEFAULT '';
CREATE INDEX poll_jobs_lane_due ON poll_jobs (provider, account, next_poll_at)
    WHERE next_poll_at IS NOT NULL;

-- Accounts added at run time (the admin API and `finality accounts`), read
-- by every node every few seconds. `spec` holds only names of environment
-- variables and files, never a secret.
CREATE TABLE provider_accounts (
    provider    TEXT   NOT NULL,
    account     TEXT   NOT NULL,
    spec        JSONB  NOT NULL,
    disabled_at BIGINT,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    updated_by  TEXT   NOT NULL,
    PRIMARY KEY (provider, account)
);
