-- The pets of one owner, by name: the `pets` detail of GET /owners, where :owner binds from
-- the owner row. Their `events` bind :name from "name".
SELECT name, species, sex, birth, death
FROM pet
WHERE owner = :owner
ORDER BY name
