-- The events of one pet, oldest first: the `events` detail of the pets, where :name binds
-- from the parent row's "name".
SELECT "date",
       type,
       remark
FROM event
WHERE name = :name
ORDER BY "date", type
