-- Live engine nodes: each records a heartbeat every few seconds. A node
-- whose heartbeat stops (killed, lost its host) has its poll leases
-- released by the survivors, so its polls run again within seconds rather
-- than when its leases expire; its late writes stay fenced by the lock token.
CREATE TABLE nodes (
    worker_id    TEXT PRIMARY KEY,
    started_at   BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL
);
