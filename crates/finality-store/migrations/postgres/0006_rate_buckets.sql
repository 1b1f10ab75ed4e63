-- One token bucket per rate-limited provider, shared by every node: a node
-- leases a few tokens at a time (locking the row for one short
-- transaction), so all nodes together stay within the provider's limit.
CREATE TABLE rate_buckets (
    provider   TEXT PRIMARY KEY,
    tokens     DOUBLE PRECISION NOT NULL,
    updated_at BIGINT NOT NULL
);
