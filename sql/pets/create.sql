-- POST /pets: the new row comes back through RETURNING (PostgreSQL, SQLite 3.35+). The owner
-- is the token's subject, always bound as a parameter.
INSERT INTO pet (name, owner, species, sex, birth, death)
VALUES (:name, :claims.sub, :species, :sex, :birth, :death)
RETURNING name, owner, species, sex, birth, death
