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
-- client's cached copy is revalidated (ETag, 304) without reading the pets.
CREATE TABLE pet_version (version INTEGER NOT NULL);
INSERT INTO pet_version (version) VALUES (0);
CREATE TRIGGER pet_inserted AFTER INSERT ON pet BEGIN UPDATE pet_version SET version = version + 1; END;
CREATE TRIGGER pet_updated AFTER UPDATE ON pet BEGIN UPDATE pet_version SET version = version + 1; END;
CREATE TRIGGER pet_deleted AFTER DELETE ON pet BEGIN UPDATE pet_version SET version = version + 1; END;
