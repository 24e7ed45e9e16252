-- POST /events, and POST /events/bulk for many at once: adds an event to a pet of the token's
-- subject. Another owner's pet, or none, gets no row: the write answers 404 (a bulk write 422,
-- naming the record, and commits none). On PostgreSQL row-level security checks the pet's
-- owner as well (sql/schema/postgres/pets-security.sql).
INSERT INTO event (name, "date", type, remark)
SELECT pet.name, :date, :type, :remark
FROM pet
WHERE pet.name = :name AND pet.owner = :claims.sub
