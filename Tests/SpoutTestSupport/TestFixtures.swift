import Foundation

/// The data the suite carries in `Tests/Fixtures` (see its README): everything a test reads
/// is in the repository or generated into the temporary directory at run time.
public enum TestFixtures {
    /// The repository's root directory.
    public static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `Tests/Fixtures`.
    public static var directory: String { self.repositoryRoot.appendingPathComponent("Tests/Fixtures").path }

    /// The hand-written test_db subset: `employees.sql` and its `load_*.dump` files.
    public static var testDB: String { self.directory + "/test_db" }

    /// The MySQL tutorial's pets as tab-separated values.
    public static var petsTSV: String { self.directory + "/pets/pet.tsv" }

    /// What the test_db fixture holds, for assertions.
    public enum TestDB {
        public static let rowCounts: [String: Int64] = [
            "departments": 8, "employees": 14, "dept_emp": 15, "dept_manager": 3, "titles": 19, "salaries": 19,
        ]
        /// Rows of each dump file.
        public static let fileRowCounts: [String: Int] = [
            "load_departments.dump": 8, "load_employees.dump": 14, "load_dept_emp.dump": 15,
            "load_dept_manager.dump": 3, "load_titles.dump": 19, "load_salaries1.dump": 10,
            "load_salaries2.dump": 5, "load_salaries3.dump": 4,
        ]
    }
}
