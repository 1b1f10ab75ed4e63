-- Transactional enqueue from any language, the MariaDB counterpart of
-- PostgreSQL's finality_register_payment function (postgres/0001; no later
-- migration changes it): call it inside your own transaction and the
-- payment and its first poll commit or roll back with your data. It writes
-- what the PostgreSQL function writes (a `pending` payment without
-- merchant_ref or account, and its poll job due after the first delay).
--
--   CALL finality_register_payment(id, provider, provider_ref, amount, currency,
--                                  kind, metadata, first_poll_delay_ms, now_ms);
--
-- A procedure returns no value: its answer is a one-row result set, column
-- `registered`: 'created', or 'exists' when the payment is already
-- registered with the same body (provider, provider_ref, kind, amount,
-- currency, and metadata equal as JSON). A different body raises
-- SQLSTATE 23000 / error 1062 (PostgreSQL: 23505), like a conflict of
-- (provider, provider_ref) with another payment, which is re-raised as is.
-- Invalid arguments raise SQLSTATE 22023 with PostgreSQL's messages
-- (metadata that is not JSON: 22P02).
--
-- A procedure takes no defaults, so every argument is passed; NULL stands
-- for PostgreSQL's default: kind 'payment', metadata '{}',
-- first_poll_delay_ms 1000, now_ms this server's clock (the one place SQL
-- reads time, for callers outside Rust that have no finality Clock to pass).
--
-- Called outside a transaction with autocommit on, it makes its own, so its
-- two rows commit together as the PostgreSQL function's statement does.
-- PostgreSQL's NOTIFY to waiting nodes has no MariaDB counterpart: nodes
-- find the new job by polling. SQL SECURITY INVOKER, as PostgreSQL: the
-- caller needs its own rights on payments and poll_jobs.
CREATE PROCEDURE finality_register_payment(
    IN p_id                  TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
    IN p_provider            TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
    IN p_provider_ref        TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
    IN p_amount              BIGINT,
    IN p_currency            TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
    IN p_kind                TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
    IN p_metadata            LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
    IN p_first_poll_delay_ms BIGINT,
    IN p_now_ms              BIGINT
)
MODIFIES SQL DATA
SQL SECURITY INVOKER
COMMENT 'finality: register a payment and its first poll; result set: registered = created | exists'
BEGIN
    DECLARE v_kind     TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin
        DEFAULT COALESCE(p_kind, 'payment');
    DECLARE v_metadata LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin
        DEFAULT COALESCE(p_metadata, '{}');
    DECLARE v_delay    BIGINT DEFAULT COALESCE(p_first_poll_delay_ms, 1000);
    DECLARE v_now      BIGINT;
    DECLARE v_own_tx   BOOLEAN DEFAULT FALSE;
    DECLARE v_exists   BOOLEAN DEFAULT FALSE;
    DECLARE v_found    INT DEFAULT 0;
    DECLARE e_provider     VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
    DECLARE e_provider_ref VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
    DECLARE e_kind         VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
    DECLARE e_amount       BIGINT;
    DECLARE e_currency     VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
    DECLARE e_metadata     LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
    DECLARE v_message      VARCHAR(512);
    -- Any error after this procedure began its own transaction undoes it
    -- before the error goes to the caller (in the caller's transaction the
    -- failed statement alone is undone, as ever, and the caller decides).
    DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
        IF v_own_tx THEN
            ROLLBACK;
        END IF;
        RESIGNAL;
    END;

    -- The checks of the PostgreSQL function. Its patterns are anchored with
    -- `$`, which matches only at the very end there but also before a final
    -- newline in MariaDB's PCRE: so "no character outside the set" and the
    -- length are checked apart, on the bytes (case-sensitive, ASCII only).
    IF p_id IS NULL OR CHAR_LENGTH(p_id) NOT BETWEEN 1 AND 255
       OR CAST(p_id AS BINARY) REGEXP '[^!-.0-~]' THEN
        SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT =
            'finality: id must be 1 to 255 printable ASCII characters without spaces or /';
    END IF;
    IF p_provider_ref IS NULL OR CHAR_LENGTH(p_provider_ref) NOT BETWEEN 1 AND 255
       OR CAST(p_provider_ref AS BINARY) REGEXP '[^!-.0-~]' THEN
        SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT =
            'finality: provider_ref must be 1 to 255 printable ASCII characters without spaces or /';
    END IF;
    IF p_amount IS NULL OR p_amount <= 0 THEN
        SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT =
            'finality: amount must be a positive integer number of minor units';
    END IF;
    IF p_currency IS NULL OR CHAR_LENGTH(p_currency) <> 3
       OR CAST(p_currency AS BINARY) REGEXP '[^A-Z]' THEN
        SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT =
            'finality: currency must be an ISO 4217 code (three upper-case letters)';
    END IF;
    IF CAST(v_kind AS BINARY) NOT IN (CAST('payment' AS BINARY), CAST('refund' AS BINARY),
                                      CAST('payout' AS BINARY)) THEN
        SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT =
            'finality: kind must be payment, refund or payout';
    END IF;
    -- PostgreSQL refuses metadata that is not JSON when the call is made.
    IF NOT JSON_VALID(v_metadata) THEN
        SIGNAL SQLSTATE '22P02' SET MESSAGE_TEXT = 'finality: metadata must be JSON';
    END IF;

    -- This server's clock in milliseconds, independent of the session's
    -- time zone (PostgreSQL: clock_timestamp(), rounded).
    SET v_now = COALESCE(p_now_ms,
        ROUND(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) / 1000));

    IF @@autocommit = 1 AND @@in_transaction = 0 THEN
        START TRANSACTION;
        SET v_own_tx = TRUE;
    END IF;

    -- PostgreSQL: INSERT ... ON CONFLICT (id) DO NOTHING. Here the insert
    -- fails on a duplicate key, and only a duplicate id means "registered
    -- before"; a duplicate (provider, provider_ref) of another payment is
    -- re-raised as it is (PostgreSQL raises it too).
    BEGIN
        DECLARE EXIT HANDLER FOR 1062
        BEGIN
            -- A locking read: it sees the row committed by a concurrent
            -- registration whatever this transaction's snapshot.
            SELECT COUNT(*) INTO v_found FROM payments WHERE id = p_id LOCK IN SHARE MODE;
            IF v_found = 0 THEN
                RESIGNAL;
            END IF;
            SET v_exists = TRUE;
        END;
        INSERT INTO payments (id, provider, provider_ref, kind, amount, currency, metadata,
                              status, created_at, updated_at)
        VALUES (p_id, p_provider, p_provider_ref, v_kind, p_amount, p_currency, v_metadata,
                'pending', v_now, v_now);
    END;

    IF NOT v_exists THEN
        INSERT INTO poll_jobs (payment_id, provider, provider_ref, kind, registered_at, next_poll_at)
        VALUES (p_id, p_provider, p_provider_ref, v_kind, v_now, v_now + v_delay);
        IF v_own_tx THEN
            COMMIT;
        END IF;
        SELECT 'created' AS registered;
    ELSE
        SELECT provider, provider_ref, kind, amount, currency, metadata
          INTO e_provider, e_provider_ref, e_kind, e_amount, e_currency, e_metadata
          FROM payments WHERE id = p_id LOCK IN SHARE MODE;
        -- Byte for byte (PostgreSQL compares text exactly; utf8mb4_bin
        -- would ignore trailing spaces), metadata as JSON (as jsonb `=`).
        IF CAST(e_provider AS BINARY) = CAST(p_provider AS BINARY)
           AND CAST(e_provider_ref AS BINARY) = CAST(p_provider_ref AS BINARY)
           AND CAST(e_kind AS BINARY) = CAST(v_kind AS BINARY)
           AND e_amount = p_amount
           AND CAST(e_currency AS BINARY) = CAST(p_currency AS BINARY)
           AND JSON_EQUALS(e_metadata, v_metadata) THEN
            IF v_own_tx THEN
                COMMIT;
            END IF;
            SELECT 'exists' AS registered;
        ELSE
            -- A signal's message holds 128 characters: a long id is cut.
            SET v_message = CONCAT('finality: payment ',
                                   IF(CHAR_LENGTH(p_id) > 66, CONCAT(LEFT(p_id, 63), '...'), p_id),
                                   ' is already registered with a different body');
            SIGNAL SQLSTATE '23000' SET MESSAGE_TEXT = v_message, MYSQL_ERRNO = 1062;
        END IF;
    END IF;
END;
