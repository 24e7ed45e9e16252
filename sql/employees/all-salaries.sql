-- GET /salaries: the whole table, streamed.
SELECT emp_no    AS "employeeNumber",
       salary,
       from_date AS "fromDate",
       to_date   AS "toDate"
FROM salaries
ORDER BY emp_no, from_date
