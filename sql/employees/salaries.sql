-- The salaries of one employee, oldest first. Used as GET /employees/{employeeNumber}/salaries
-- and as the `salaries` detail, where :employeeNumber binds from the parent row.
SELECT salary,
       from_date AS "fromDate",
       to_date   AS "toDate"
FROM salaries
WHERE emp_no = :employeeNumber
ORDER BY from_date
