-- GET /pets on PostgreSQL: :owner cast (PostgreSQL cannot type a bare `:owner IS NULL`), and
-- names sorted bytewise like SQLite (COLLATE "C"), whatever the database's collation.
SELECT name, species, sex, birth
FROM pet
WHERE (CAST(:owner AS text) IS NULL OR owner = CAST(:owner AS text))
ORDER BY name COLLATE "C"
