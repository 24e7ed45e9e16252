-- The menagerie's event table: what happened to each pet (litters, visits to the vet, ...),
-- the `events` detail of the pets and, one level further down, of GET /owners' pets. A pet's
-- events go with it. Its own script, after pets.sql: a database seeded before the table
-- existed gets it added (SQLiteSeeder) without touching its pets.
CREATE TABLE event (
    name        VARCHAR(20)     NOT NULL REFERENCES pet (name) ON DELETE CASCADE,
    "date"      DATE            NOT NULL,
    type        VARCHAR(15)     NOT NULL,
    remark      VARCHAR(255)
);
CREATE INDEX event_name_idx ON event (name, "date");
