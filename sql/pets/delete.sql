-- DELETE /pets/{name}: only the owner's (the token's subject); another caller's pet is 404.
-- On PostgreSQL row-level security checks the owner as well (sql/schema/postgres/pets-security.sql).
DELETE FROM pet WHERE name = :name AND owner = :claims.sub
