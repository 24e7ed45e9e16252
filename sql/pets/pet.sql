-- GET /pets/{name}
SELECT name, owner, species, sex, birth, death
FROM pet
WHERE name = :name
