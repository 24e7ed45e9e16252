-- The pet table of the MySQL Reference Manual's menagerie example.

CREATE TABLE pet (
    name        VARCHAR(20)     NOT NULL PRIMARY KEY,
    owner       VARCHAR(255),   -- a token's subject (OpenID Connect allows 255 characters)
    species     VARCHAR(20),
    sex         CHAR(1),
    birth       DATE,
    death       DATE
);

-- GET /pets?owner=... filters on owner (Spout warns at startup about a filter no index serves).
CREATE INDEX pet_owner_idx ON pet (owner);

-- A counter that every write to pet advances: GET /pets reads it as its versionSql, so a
-- client's cached copy is revalidated (ETag, 304) without reading the pets. One row: writes
-- to pet queue on it, which suits this small example; a busy table would rather read
-- max(updated_at) from an indexed column.
CREATE TABLE pet_version (version bigint NOT NULL);
INSERT INTO pet_version (version) VALUES (0);
CREATE OR REPLACE FUNCTION pet_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE pet_version SET version = version + 1;
    RETURN NULL;
END
$$;
CREATE TRIGGER pet_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON pet
    FOR EACH STATEMENT EXECUTE FUNCTION pet_changed();
