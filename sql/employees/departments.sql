-- GET /departments
SELECT dept_no   AS "departmentNumber",
       dept_name AS "name"
FROM departments
ORDER BY dept_no
