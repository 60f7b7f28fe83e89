DO $$
BEGIN
    EXECUTE 'ALTER TABLE checkpoints ALTER COLUMN state SET COMPRESSION default';
    EXECUTE 'ALTER TABLE messages ALTER COLUMN parts SET COMPRESSION default';
    EXECUTE 'ALTER TABLE message_drafts ALTER COLUMN text SET COMPRESSION default';
EXCEPTION WHEN feature_not_supported OR syntax_error OR invalid_parameter_value THEN
    NULL;
END
$$;
