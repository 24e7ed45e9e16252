-- Secondary indexes of the employees database, created after the data is loaded
-- (building an index once is faster than maintaining it row by row).
-- departments(dept_name) is unique through its UNIQUE constraint in employees.sql.

CREATE INDEX employees_last_name_idx ON employees (last_name);
CREATE INDEX employees_first_name_idx ON employees (first_name);
CREATE INDEX employees_hire_date_idx ON employees (hire_date);
CREATE INDEX dept_emp_dept_no_idx ON dept_emp (dept_no);
CREATE INDEX dept_manager_dept_no_idx ON dept_manager (dept_no);
