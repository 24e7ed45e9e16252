-- DELETE /pets/{name} on PostgreSQL: the policy pet_delete (sql/schema/postgres/pets-security.sql)
-- hides other callers' pets, so this deletes only the owner's.
DELETE FROM pet WHERE name = :name
