-- The sequencer's round (0015) returning the rows it numbered, each with
-- its payment's provider and registration time: the node that sequenced
-- them keeps the newest in memory (the feed tail), so its pushers and
-- long-polling readers take them without reading the outbox again, and
-- time to final is measured from these rows instead of a second read.
-- Same rules as 0015: one sequencer at a time (the `feed_state` row lock),
-- positions only for rows already committed, one statement in its own
-- transaction. 0015's function stays for nodes not yet upgraded.
CREATE FUNCTION finality_sequence_feed_rows(p_limit BIGINT, p_origin TEXT)
RETURNS TABLE (feed_seq BIGINT, event_id TEXT, payment_id TEXT, type TEXT,
               status TEXT, previous_status TEXT, source TEXT,
               occurred_at BIGINT, provider TEXT, created_at BIGINT)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_last BIGINT;
    v_n    BIGINT;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM outbox WHERE outbox.feed_seq IS NULL) THEN
        RETURN;
    END IF;
    SELECT f.last_seq INTO v_last FROM feed_state f WHERE f.id = 1 FOR UPDATE;
    IF v_last IS NULL THEN
        RAISE EXCEPTION 'finality: the feed_state row is missing' USING ERRCODE = 'P0002';
    END IF;
    -- LEFT JOIN: a row whose payment is gone is numbered and returned all
    -- the same (without provider), so the count below is the rows numbered.
    RETURN QUERY
    WITH numbered AS (
        UPDATE outbox SET feed_seq = v_last + t.rn
        FROM (SELECT o.id, row_number() OVER (ORDER BY o.id) AS rn FROM outbox o
              WHERE o.feed_seq IS NULL ORDER BY o.id LIMIT p_limit) AS t
        WHERE outbox.id = t.id
        RETURNING outbox.feed_seq, outbox.event_id, outbox.payment_id, outbox.type,
                  outbox.status, outbox.previous_status, outbox.source,
                  outbox.occurred_at
    )
    SELECT n.feed_seq, n.event_id, n.payment_id, n.type, n.status,
           n.previous_status, n.source, n.occurred_at, p.provider, p.created_at
    FROM numbered n LEFT JOIN payments p ON p.id = n.payment_id
    ORDER BY n.feed_seq;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF v_n > 0 THEN
        UPDATE feed_state SET last_seq = feed_state.last_seq + v_n WHERE id = 1;
        -- Pushers and feed readers on other nodes wake at the commit and
        -- learn the position reached (they skip reading when already there).
        -- The origin (the calling process) lets that process ignore its own
        -- announcement: it may be heard before this call's rows are back,
        -- and waking readers then would send them to the database for rows
        -- about to be in memory. (0015's nodes read "N origin" as an
        -- unknown position and ask the database: correct, one read more.)
        PERFORM pg_notify('finality_feed', (v_last + v_n)::text || ' ' || p_origin);
    END IF;
END
$$;
