-- POST /pets: the new row comes back through RETURNING (PostgreSQL, SQLite 3.35+).
INSERT INTO pet (name, owner, species, sex, birth, death)
VALUES (:name, :owner, :species, :sex, :birth, :death)
RETURNING name, owner, species, sex, birth, death
