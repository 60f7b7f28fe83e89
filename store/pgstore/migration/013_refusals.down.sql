DROP FUNCTION baton_refused(text);
