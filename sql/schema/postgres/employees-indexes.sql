-- Secondary indexes of the employees database, created after the data is loaded
-- (building an index once is faster than maintaining it row by row).
-- departments(dept_name) is unique through its UNIQUE constraint in employees.sql.

CREATE INDEX employees_last_name_idx ON employees (last_name);
CREATE INDEX employees_first_name_idx ON employees (first_name);
CREATE INDEX employees_hire_date_idx ON employees (hire_date);
CREATE INDEX dept_emp_dept_no_idx ON dept_emp (dept_no);
CREATE INDEX dept_manager_dept_no_idx ON dept_manager (dept_no);

-- Every name in the statistics, so that a rare or absent name is estimated as rare. The default
-- target (100) keeps only names clearly more common than the others: of the generator's 113
-- evenly spread last names it keeps 6, and any other name is estimated at an average name's
-- share, so a page of it (`ORDER BY emp_no LIMIT n`) is planned as a walk of the primary key,
-- which reads the whole table when the name is rare or absent (docs/benchmarks.md, "Filters").
-- 2,000 is more than test_db's names; ANALYZE then samples the whole table (300,024 rows).
ALTER TABLE employees ALTER COLUMN first_name SET STATISTICS 2000,
                      ALTER COLUMN last_name SET STATISTICS 2000;
