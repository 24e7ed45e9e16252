-- GET /departments/{departmentNumber}/employees: the current members (to_date 9999-01-01).
SELECT e.emp_no     AS "employeeNumber",
       e.first_name AS "firstName",
       e.last_name  AS "lastName",
       e.hire_date  AS "hireDate"
FROM dept_emp de
JOIN employees e ON e.emp_no = de.emp_no
WHERE de.dept_no = :departmentNumber
  AND de.to_date = '9999-01-01'
ORDER BY e.emp_no
