-- GET /employees/{employeeNumber}
SELECT emp_no     AS "employeeNumber",
       first_name AS "firstName",
       last_name  AS "lastName"
FROM employees
WHERE emp_no = :employeeNumber
