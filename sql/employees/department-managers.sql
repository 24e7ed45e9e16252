-- The managers of one department, earliest first: the `managers` detail of
-- GET /departments/{departmentNumber}, where :departmentNumber binds from the department row.
-- "employeeNumber" is what the employees' own details (titles, salaries) bind from.
SELECT e.emp_no     AS "employeeNumber",
       e.first_name AS "firstName",
       e.last_name  AS "lastName",
       dm.from_date AS "fromDate",
       dm.to_date   AS "toDate"
FROM dept_manager dm
JOIN employees e ON e.emp_no = dm.emp_no
WHERE dm.dept_no = :departmentNumber
ORDER BY dm.from_date, e.emp_no
