-- GET /departments/{departmentNumber}: one department. Its `managers` and `employees` details
-- bind :departmentNumber from this row's "departmentNumber".
SELECT dept_no   AS "departmentNumber",
       dept_name AS "name"
FROM departments
WHERE dept_no = :departmentNumber
