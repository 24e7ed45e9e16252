-- DELETE /pets/{name}: only the owner's (the token's subject); another caller's pet is 404.
-- PostgreSQL leaves this to row-level security (sql/postgres/pets/delete.sql).
DELETE FROM pet WHERE name = :name AND owner = :claims.sub
