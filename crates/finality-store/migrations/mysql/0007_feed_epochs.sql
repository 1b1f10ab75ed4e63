-- Feed positions belong to one history (see PostgreSQL 0027). MariaDB's
-- history changes server when a replica is promoted or a backup is
-- restored into another server: the origin is the server's `server_id`
-- (unique per server in a replication topology). A replica applies the
-- primary's row changes without running this trigger, so the promoted
-- one's first advance starts the new epoch.
ALTER TABLE feed_state ADD COLUMN epoch VARCHAR(32);
ALTER TABLE feed_state ADD COLUMN epoch_since BIGINT NOT NULL DEFAULT 0;
ALTER TABLE feed_state ADD COLUMN epoch_origin VARCHAR(64);

CREATE TABLE feed_epochs (
    id        BIGINT      NOT NULL AUTO_INCREMENT PRIMARY KEY,
    epoch     VARCHAR(32) NOT NULL UNIQUE,
    since_seq BIGINT      NOT NULL,
    origin    VARCHAR(64) NOT NULL,
    began_at  BIGINT      NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TRIGGER feed_state_epoch BEFORE UPDATE ON feed_state
FOR EACH ROW
BEGIN
    DECLARE v_origin VARCHAR(64) DEFAULT CONCAT('server ', @@server_id);
    IF NEW.epoch IS NULL OR NOT (NEW.epoch_origin <=> v_origin) THEN
        SET NEW.epoch = SUBSTR(MD5(CONCAT(RAND(), NOW(6), v_origin)), 1, 12);
        SET NEW.epoch_since = OLD.last_seq;
        SET NEW.epoch_origin = v_origin;
        INSERT INTO feed_epochs (epoch, since_seq, origin, began_at)
        VALUES (NEW.epoch, OLD.last_seq, v_origin, FLOOR(UNIX_TIMESTAMP(NOW(6)) * 1000));
    END IF;
END;

UPDATE feed_state SET last_seq = last_seq WHERE id = 1;
UPDATE feed_state SET epoch_since = 0 WHERE id = 1;
UPDATE feed_epochs SET since_seq = 0;
