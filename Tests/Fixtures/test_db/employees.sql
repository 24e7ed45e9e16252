--  Spout's hand-written test fixture in the format of datacharmer/test_db's employees.sql.
--  The rows are Spout's own (14 employees). Spout's loader creates its own schema
--  (sql/schema/) and reads only the `source` lines below, in order.

DROP DATABASE IF EXISTS employees;
CREATE DATABASE IF NOT EXISTS employees;
USE employees;

SELECT 'CREATING DATABASE STRUCTURE' as 'INFO';

-- (test_db's CREATE TABLE statements stand here; Spout's loader skips them.)

flush /*!50503 binary logs */;

SELECT 'LOADING departments' as 'INFO';
source load_departments.dump ;
SELECT 'LOADING employees' as 'INFO';
SOURCE load_employees.dump ;
SELECT 'LOADING dept_emp' as 'INFO';
source load_dept_emp.dump ;
SELECT 'LOADING dept_manager' as 'INFO';
source load_dept_manager.dump;
SELECT 'LOADING titles' as 'INFO';
	source load_titles.dump ;
SELECT 'LOADING salaries' as 'INFO';
source load_salaries1.dump ;
source load_salaries2.dump ;
source load_salaries3.dump ;

source show_elapsed.sql ;
