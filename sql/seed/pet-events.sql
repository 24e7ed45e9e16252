-- The 10 rows of the MySQL menagerie's event.txt. Each is added only while its pet exists
-- (a database seeded before the event table may have lost pets through the API since).
-- Portable SQL: runs on PostgreSQL and SQLite.

INSERT INTO event (name, "date", type, remark) SELECT 'Fluffy', '1995-05-15', 'litter', '4 kittens, 3 female, 1 male' WHERE EXISTS (SELECT 1 FROM pet WHERE name = 'Fluffy');
INSERT INTO event (name, "date", type, remark) SELECT 'Buffy', '1993-06-23', 'litter', '5 puppies, 2 female, 3 male' WHERE EXISTS (SELECT 1 FROM pet WHERE name = 'Buffy');
INSERT INTO event (name, "date", type, remark) SELECT 'Buffy', '1994-06-19', 'litter', '3 puppies, 3 female' WHERE EXISTS (SELECT 1 FROM pet WHERE name = 'Buffy');
INSERT INTO event (name, "date", type, remark) SELECT 'Chirpy', '1999-03-21', 'vet', 'needed beak straightened' WHERE EXISTS (SELECT 1 FROM pet WHERE name = 'Chirpy');
INSERT INTO event (name, "date", type, remark) SELECT 'Slim', '1997-08-03', 'vet', 'broken rib' WHERE EXISTS (SELECT 1 FROM pet WHERE name = 'Slim');
INSERT INTO event (name, "date", type, remark) SELECT 'Bowser', '1991-10-12', 'kennel', NULL WHERE EXISTS (SELECT 1 FROM pet WHERE name = 'Bowser');
INSERT INTO event (name, "date", type, remark) SELECT 'Fang', '1991-10-12', 'kennel', NULL WHERE EXISTS (SELECT 1 FROM pet WHERE name = 'Fang');
INSERT INTO event (name, "date", type, remark) SELECT 'Fang', '1998-08-28', 'birthday', 'Gave him a new chew toy' WHERE EXISTS (SELECT 1 FROM pet WHERE name = 'Fang');
INSERT INTO event (name, "date", type, remark) SELECT 'Claws', '1998-03-17', 'birthday', 'Gave him a new flea collar' WHERE EXISTS (SELECT 1 FROM pet WHERE name = 'Claws');
INSERT INTO event (name, "date", type, remark) SELECT 'Whistler', '1998-12-09', 'birthday', 'First birthday' WHERE EXISTS (SELECT 1 FROM pet WHERE name = 'Whistler');
