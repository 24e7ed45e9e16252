-- GET /pets: every pet, or the pets of :owner.
SELECT name, species, sex, birth
FROM pet
WHERE (:owner IS NULL OR owner = :owner)
ORDER BY name
