-- Feed positions belong to one history (docs/EVENTS.md, "When the feed's
-- history was rewound"). A failover to a standby that had not received
-- the last commits, or a restore from backup, takes the feed back to an
-- earlier head; the positions after it are then given again, to other
-- events. The feed's epoch names its current history: it changes the
-- first time a position is given on another database (system identifier)
-- or another timeline (a promotion, a point-in-time restore), and `since`
-- is the head it began from, the last position both histories share.
--
-- By construction: every path that gives positions advances the one
-- `feed_state` row, and this trigger runs on that update, before the new
-- positions count. Readers qualify their cursors with the epoch, so a
-- cursor from a rewound history is told so (409 `feed_rewound`), never
-- answered with other events at positions it already read.
ALTER TABLE feed_state ADD COLUMN epoch TEXT;
ALTER TABLE feed_state ADD COLUMN epoch_since BIGINT NOT NULL DEFAULT 0;
ALTER TABLE feed_state ADD COLUMN epoch_origin TEXT;

-- Every epoch this history went through (a rewound history's last ones
-- are gone with it): where each began, so a reader of an older one is
-- told from which position on what it read no longer exists.
-- `id` orders them as this history wrote them (a sequence never goes back,
-- even across a failover).
CREATE TABLE feed_epochs (
    id        BIGSERIAL PRIMARY KEY,
    epoch     TEXT   NOT NULL UNIQUE,
    since_seq BIGINT NOT NULL,
    origin    TEXT   NOT NULL,
    began_at  BIGINT NOT NULL
);

-- Where this database's history runs now: its system identifier and the
-- WAL timeline it writes (both readable without privileges). The
-- identifier is read from the control file once per connection (a
-- connection is to one server for its life), the timeline from shared
-- memory each time.
CREATE FUNCTION finality_feed_origin() RETURNS TEXT
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_sys TEXT := current_setting('finality.system_identifier', true);
BEGIN
    IF v_sys IS NULL OR v_sys = '' THEN
        SELECT system_identifier::text INTO v_sys FROM pg_control_system();
        PERFORM set_config('finality.system_identifier', v_sys, false);
    END IF;
    RETURN v_sys || '/' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8);
END
$$;

CREATE FUNCTION finality_feed_epoch() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_origin TEXT := finality_feed_origin();
BEGIN
    IF NEW.epoch IS NULL OR NEW.epoch_origin IS DISTINCT FROM v_origin THEN
        NEW.epoch := substr(md5(random()::text || clock_timestamp()::text || v_origin), 1, 12);
        NEW.epoch_since := OLD.last_seq;
        NEW.epoch_origin := v_origin;
        INSERT INTO feed_epochs (epoch, since_seq, origin, began_at)
        VALUES (NEW.epoch, OLD.last_seq, v_origin,
                (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT);
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER feed_state_epoch BEFORE UPDATE ON feed_state
FOR EACH ROW EXECUTE FUNCTION finality_feed_epoch();

-- The first epoch: this history from its start (the trigger fills it in).
UPDATE feed_state SET last_seq = last_seq WHERE id = 1;
UPDATE feed_state SET epoch_since = 0 WHERE id = 1;
UPDATE feed_epochs SET since_seq = 0;
