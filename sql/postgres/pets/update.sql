-- POST /pets/{name} on PostgreSQL: as sql/pets/update.sql, with the owner check left to the
-- policy pet_change (sql/schema/postgres/pets-security.sql).
UPDATE pet
SET owner   = COALESCE(:owner, owner),
    species = COALESCE(:species, species),
    sex     = COALESCE(:sex, sex),
    birth   = COALESCE(:birth, birth),
    death   = COALESCE(:death, death)
WHERE name = :name
RETURNING name, owner, species, sex, birth, death
