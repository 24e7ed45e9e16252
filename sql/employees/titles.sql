-- The titles of one employee, oldest first. Used as GET /employees/{employeeNumber}/titles and
-- as the `titles` detail, where :employeeNumber binds from the parent row's "employeeNumber".
SELECT title,
       from_date AS "fromDate",
       to_date   AS "toDate"
FROM titles
WHERE emp_no = :employeeNumber
ORDER BY from_date, title
