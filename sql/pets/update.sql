-- POST /pets/{name}: a partial update. A parameter that was not sent is NULL, and
-- COALESCE keeps the column's value; so only the fields sent change (and none can be cleared).
-- Only the owner (the token's subject) changes a pet; another caller's pet is 404. Sending
-- owner gives the pet away. On PostgreSQL row-level security checks the owner as well
-- (sql/schema/postgres/pets-security.sql): either alone keeps other callers out.
UPDATE pet
SET owner   = COALESCE(:owner, owner),
    species = COALESCE(:species, species),
    sex     = COALESCE(:sex, sex),
    birth   = COALESCE(:birth, birth),
    death   = COALESCE(:death, death)
WHERE name = :name AND owner = :claims.sub
RETURNING name, owner, species, sex, birth, death
