-- The capture's version, for any role: `run` and `status` compare it with
-- their own (the latest source migration they carry), so that a source
-- whose capture an older tidemark installed is said, with the fix (`setup`
-- again, as a superuser), rather than missing the newer capture's fixes
-- silently. tidemark.migrations itself is readable by its owner only.
-- Applied once by `tidemark setup` (as a superuser), recorded in tidemark.migrations.
CREATE OR REPLACE FUNCTION tidemark.capture_version()
RETURNS integer
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT coalesce(max(version), 0) FROM tidemark.migrations $$;
GRANT EXECUTE ON FUNCTION tidemark.capture_version() TO PUBLIC;
