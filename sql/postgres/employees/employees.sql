-- GET /employees on PostgreSQL: the portable SQL with the parameters cast, because PostgreSQL
-- cannot infer the type of a parameter that only appears in `:x IS NULL`.
SELECT emp_no     AS "employeeNumber",
       first_name AS "firstName",
       last_name  AS "lastName",
       hire_date  AS "hireDate"
FROM employees
WHERE (CAST(:firstName AS text) IS NULL OR first_name = CAST(:firstName AS text))
  AND (CAST(:lastName AS text) IS NULL OR last_name = CAST(:lastName AS text))
  AND (CAST(:hiredAfter AS date) IS NULL OR hire_date > CAST(:hiredAfter AS date))
  AND (CAST(:hiredBefore AS date) IS NULL OR hire_date < CAST(:hiredBefore AS date))
ORDER BY emp_no
