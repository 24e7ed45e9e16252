-- DELETE /pets/{name}
DELETE FROM pet WHERE name = :name
