-- The pet table of the MySQL Reference Manual's menagerie example.

CREATE TABLE pet (
    name        VARCHAR(20)     NOT NULL PRIMARY KEY,
    owner       VARCHAR(20),
    species     VARCHAR(20),
    sex         CHAR(1),
    birth       DATE,
    death       DATE
);
