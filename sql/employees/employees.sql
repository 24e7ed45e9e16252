-- GET /employees: every employee matching the optional filters (a NULL filter matches all).
SELECT emp_no     AS "employeeNumber",
       first_name AS "firstName",
       last_name  AS "lastName",
       hire_date  AS "hireDate"
FROM employees
WHERE (:firstName IS NULL OR first_name = :firstName)
  AND (:lastName IS NULL OR last_name = :lastName)
  AND (:hiredAfter IS NULL OR hire_date > :hiredAfter)
  AND (:hiredBefore IS NULL OR hire_date < :hiredBefore)
ORDER BY emp_no
