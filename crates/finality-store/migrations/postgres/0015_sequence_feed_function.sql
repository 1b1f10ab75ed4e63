-- The feed sequencer's round in one statement: called on its own (no
-- explicit transaction), it is one round trip instead of eight (look,
-- begin, lock, number, advance, notify, commit), which is most of what an
-- event waits for between its status change and its readers on a loaded
-- machine. The rules are those of 0003: one sequencer at a time (the
-- `feed_state` row lock), positions only for rows already committed. Each
-- statement of a VOLATILE function takes a fresh snapshot under READ
-- COMMITTED, so the numbering after the lock sees every row the previous
-- holder numbered. Nothing waiting: no row lock, no transaction id, no
-- commit to disk.
CREATE FUNCTION finality_sequence_feed(p_limit BIGINT)
RETURNS TABLE (last_seq BIGINT, sequenced BIGINT)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_last BIGINT;
    v_n    BIGINT;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM outbox WHERE feed_seq IS NULL) THEN
        RETURN QUERY SELECT 0::BIGINT, 0::BIGINT;
        RETURN;
    END IF;
    SELECT f.last_seq INTO v_last FROM feed_state f WHERE f.id = 1 FOR UPDATE;
    IF v_last IS NULL THEN
        RAISE EXCEPTION 'finality: the feed_state row is missing' USING ERRCODE = 'P0002';
    END IF;
    UPDATE outbox SET feed_seq = v_last + t.rn
    FROM (SELECT o.id, row_number() OVER (ORDER BY o.id) AS rn FROM outbox o
          WHERE o.feed_seq IS NULL ORDER BY o.id LIMIT p_limit) AS t
    WHERE outbox.id = t.id;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF v_n > 0 THEN
        UPDATE feed_state SET last_seq = feed_state.last_seq + v_n WHERE id = 1;
        -- Pushers and feed readers on other nodes wake at the commit and
        -- learn the position reached (they skip reading when already there).
        PERFORM pg_notify('finality_feed', (v_last + v_n)::text);
    END IF;
    RETURN QUERY SELECT v_last, v_n;
END
$$;
