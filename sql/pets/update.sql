-- POST /pets/{name}: a partial update. A parameter that was not sent is NULL, and
-- COALESCE keeps the column's value; so only the fields sent change (and none can be cleared).
UPDATE pet
SET owner   = COALESCE(:owner, owner),
    species = COALESCE(:species, species),
    sex     = COALESCE(:sex, sex),
    birth   = COALESCE(:birth, birth),
    death   = COALESCE(:death, death)
WHERE name = :name
RETURNING name, owner, species, sex, birth, death
