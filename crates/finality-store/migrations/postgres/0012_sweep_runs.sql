-- One row per run of the reconciliation sweep: who ran it, how far it read,
-- what it found by kind and how much it repaired. The sweep's place in its
-- pass over the payments lives in provider_cursors under the name
-- `finality:sweep`, whose lease also keeps it to one node at a time.
CREATE TABLE sweep_runs (
    id            BIGSERIAL PRIMARY KEY,
    holder        TEXT    NOT NULL,
    started_at    BIGINT  NOT NULL,
    finished_at   BIGINT  NOT NULL,
    scanned       BIGINT  NOT NULL,
    pass_complete BIGINT  NOT NULL,
    findings      JSONB NOT NULL,
    repaired      BIGINT  NOT NULL
);
