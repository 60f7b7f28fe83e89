-- baton_refused fails the statement that calls it: a write deferred to go
-- with the transaction's next statement, or with its COMMIT, whose
-- condition did not hold (an update expecting a status the row no longer
-- has, a fenced transition). Its SQLSTATE (BT409) and DETAIL — what the
-- statement found, '' for no row — let the store return the write's own
-- error, and the transaction cannot commit: a refusal sent with COMMIT
-- rolls it back.
CREATE FUNCTION baton_refused(seen text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'baton: deferred write refused' USING ERRCODE = 'BT409', DETAIL = coalesce(seen, '');
END
$$;
