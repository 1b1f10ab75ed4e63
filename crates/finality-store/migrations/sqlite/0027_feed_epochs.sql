-- Feed positions belong to one history (see PostgreSQL 0027). An SQLite
-- file has no server or timeline that changes when it is replaced by a
-- backup, so its epoch is set once here; a cursor past the restored
-- file's head is still refused (409 `feed_rewound`, docs/EVENTS.md).
ALTER TABLE feed_state ADD COLUMN epoch TEXT;
ALTER TABLE feed_state ADD COLUMN epoch_since INTEGER NOT NULL DEFAULT 0;
ALTER TABLE feed_state ADD COLUMN epoch_origin TEXT;

CREATE TABLE feed_epochs (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    epoch     TEXT    NOT NULL UNIQUE,
    since_seq INTEGER NOT NULL,
    origin    TEXT    NOT NULL,
    began_at  INTEGER NOT NULL
);

UPDATE feed_state SET epoch = lower(hex(randomblob(6))), epoch_since = 0, epoch_origin = 'sqlite'
WHERE id = 1;
INSERT INTO feed_epochs (epoch, since_seq, origin, began_at)
SELECT epoch, 0, 'sqlite', CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
FROM feed_state WHERE id = 1;
