import Foundation
import SpoutCore
import SpoutTestSupport
import Testing

@testable import SpoutData

@Suite("MySQLDumpParser")
struct MySQLDumpParserTests {
    /// All rows of `text`.
    private func parse(_ text: String, expected: [String: Int] = [:]) throws -> [DumpRow] {
        let parser = MySQLDumpParser(text: text, name: "test.dump")
        parser.expectedColumnCounts = expected
        var rows: [DumpRow] = []
        while let row = try parser.next() {
            rows.append(row)
        }
        return rows
    }

    /// The error parsing `text` throws.
    private func parseError(_ text: String, expected: [String: Int] = [:]) throws -> DataFileError {
        do {
            _ = try self.parse(text, expected: expected)
        } catch let error as DataFileError {
            return error
        }
        Issue.record("no error parsing \(text.debugDescription)")
        throw CancellationError()
    }

    @Test func extendedInsertOverManyLines() throws {
        let rows = try self.parse(
            """
            INSERT INTO `employees` VALUES (10001,'1953-09-02','Georgi','Facello','M','1986-06-26'),
            (10002,'1964-06-02','Bezalel','Simmel','F','1985-11-21'),
            (10003,'1959-12-03','Parto','Bamford','M','1986-08-28');

            """)
        #expect(rows.count == 3)
        #expect(rows[0] == DumpRow(
            table: "employees", values: [10001, "1953-09-02", "Georgi", "Facello", "M", "1986-06-26"],
            position: SourcePosition(line: 1, column: 32)))
        #expect(rows[2].values[2] == "Parto")
        #expect(rows[2].position == SourcePosition(line: 3, column: 1))
    }

    @Test func blankLinesAndCommentsBetweenRows() throws {
        let rows = try self.parse(
            """
            -- MySQL dump 10.13
            # a hash comment ; with a semicolon
            /*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;
            /* a block
               comment; over lines */
            INSERT INTO `dept_manager` VALUES 
            (10002,'d001','1985-01-01','1991-10-01'),

            (10039, /* inline */ 'd001' , '1991-10-01','9999-01-01') -- trailing comment
            ,
            # between rows
            (10085,'d002','1985-01-01','1989-12-17');
            """)
        #expect(rows.map { $0.values[0] } == [10002, 10039, 10085])
        #expect(rows.map(\.position.line) == [7, 9, 12])
        #expect(rows[1].values == [10039, "d001", "1991-10-01", "9999-01-01"])
    }

    @Test func otherStatementsAreSkipped() throws {
        let rows = try self.parse(
            """
            SET NAMES utf8mb4;
            DROP TABLE IF EXISTS `t`;
            CREATE TABLE `t` (`a` int, `b` varchar(10) DEFAULT 'x;y', `c;` int) ENGINE=InnoDB;
            LOCK TABLES `t` WRITE;
            /*!40000 ALTER TABLE `t` DISABLE KEYS */;
            SELECT 'LOADING t' as 'INFO';
            INSERT INTO `t` VALUES (1,'a;b',NULL);
            /*!40000 ALTER TABLE `t` ENABLE KEYS */;
            UNLOCK TABLES;
            INSERT IGNORE INTO `mydb`.`u` (`x`, y) VALUES (2, 3), (4, 5);
            REPLACE INTO v VALUES (6);
            insert into w value (7);
            """)
        #expect(rows.map(\.table) == ["t", "u", "u", "v", "w"])
        #expect(rows[0].values == [1, "a;b", .null])
        #expect(rows[1].values == [2, 3])
        #expect(rows[4].values == [7])
    }

    @Test func columnListIsReported() throws {
        let parser = MySQLDumpParser(text: "INSERT INTO t (`a`, b) VALUES (1, 2);")
        #expect(try parser.nextRow())
        #expect(parser.columnNames == ["a", "b"])
        #expect(parser.values == [1, 2])
        #expect(try !parser.nextRow())
    }

    @Test func everyEscape() throws {
        let rows = try self.parse(
            #"INSERT INTO t VALUES ('\0|\'|\"|\b|\n|\r|\t|\Z|\\|\%|\_|\x', 'it''s', "say ""hi"" \"there\"", 'a"b', "a'b");"#)
        let expected = "\u{0}|'|\"|\u{8}|\n|\r|\t|\u{1A}|\\|\\%|\\_|x"
        #expect(rows[0].values == [.text(expected), "it's", "say \"hi\" \"there\"", "a\"b", "a'b"])
    }

    @Test func stringsSpanLinesAndKeepUTF8() throws {
        let parser = MySQLDumpParser(text: "INSERT INTO t VALUES ('line1\nline2', 'Müller ☃', 'x');")
        #expect(try parser.nextRow())
        #expect(parser.values == ["line1\nline2", "Müller ☃", "x"])
        #expect(parser.position(ofValue: 1) == SourcePosition(line: 2, column: 9))
        // Columns count bytes: 'Müller ☃' is 11 bytes between its quotes.
        #expect(parser.position(ofValue: 2) == SourcePosition(line: 2, column: 9 + 1 + 11 + 1 + 2))
    }

    @Test func numbersNullAndBooleans() throws {
        let rows = try self.parse(
            "INSERT INTO t VALUES (NULL, null, TRUE, false, 0, -42, +7, 12.50, -0.5, .25, 3., 1e3, -2.5E-2, 9223372036854775807, 9223372036854775808, -9223372036854775808);")
        #expect(rows[0].values == [
            .null, .null, 1, 0, 0, -42, 7, .decimal("12.50"), .decimal("-0.5"), .decimal("0.25"), 3, .double(1000),
            .double(-0.025), .integer(Int64.max), .decimal("9223372036854775808"), .integer(Int64.min),
        ])
    }

    @Test func emptyInputAndOnlyComments() throws {
        #expect(try self.parse("").isEmpty)
        #expect(try self.parse("\n\n-- nothing\n/* here */\n#\n").isEmpty)
        #expect(try self.parse("SET x = 1").isEmpty)
    }

    // MARK: Errors, each with its position

    @Test func unterminatedString() throws {
        let error = try self.parseError("INSERT INTO t VALUES (1,'a'),\n(2,'b);\n")
        #expect(error.reason == .unterminatedString)
        #expect(error.position == SourcePosition(line: 2, column: 4))
        #expect(error.description == "test.dump:2:4: unterminated string")
    }

    @Test func unterminatedStringEndingInBackslash() throws {
        let error = try self.parseError("INSERT INTO t VALUES ('abc\\")
        #expect(error.reason == .unterminatedString)
        #expect(error.position == SourcePosition(line: 1, column: 23))
    }

    @Test func truncatedRow() throws {
        let error = try self.parseError("INSERT INTO t VALUES (1,'a'),\n(2,'b'")
        #expect(error.reason == .truncatedRow)
        #expect(error.position == SourcePosition(line: 2, column: 1))
        let afterComma = try self.parseError("INSERT INTO t VALUES (1,'a'),\n  (2,")
        #expect(afterComma.reason == .truncatedRow)
        #expect(afterComma.position == SourcePosition(line: 2, column: 3))
    }

    @Test func truncatedStatement() throws {
        let afterComma = try self.parseError("INSERT INTO t VALUES (1),\n")
        #expect(afterComma.reason == .truncatedStatement)
        #expect(afterComma.position == SourcePosition(line: 2, column: 1))
        let withoutSemicolon = try self.parseError("INSERT INTO t VALUES (1)")
        #expect(withoutSemicolon.reason == .truncatedStatement)
        #expect(withoutSemicolon.position == SourcePosition(line: 1, column: 25))
        let inHeader = try self.parseError("INSERT INTO t")
        #expect(inHeader.reason == .truncatedStatement)
    }

    @Test func wrongColumnCountAgainstTheFirstRow() throws {
        let error = try self.parseError("INSERT INTO t VALUES (1,'a'),\n(2,'b'),\n  (3);")
        #expect(error.reason == .wrongColumnCount(expected: 2, found: 1))
        #expect(error.position == SourcePosition(line: 3, column: 3))
        #expect(error.description == "test.dump:3:3: wrong column count: expected 2 values, found 1")
    }

    @Test func wrongColumnCountAgainstTheTable() throws {
        let error = try self.parseError("INSERT INTO `T` VALUES (1,'a',3);", expected: ["t": 2])
        #expect(error.reason == .wrongColumnCount(expected: 2, found: 3))
        #expect(error.position == SourcePosition(line: 1, column: 24))
    }

    @Test func wrongColumnCountAgainstTheColumnList() throws {
        let error = try self.parseError("INSERT INTO t (a, b, c) VALUES (1, 2);")
        #expect(error.reason == .wrongColumnCount(expected: 3, found: 2))
        #expect(error.position == SourcePosition(line: 1, column: 32))
    }

    @Test func unexpectedCharacters() throws {
        let insideNumber = try self.parseError("INSERT INTO t VALUES (1,\n  23x);")
        #expect(insideNumber.reason == .unexpectedCharacter(found: "'x'", expected: "',' or ')' after a value"))
        #expect(insideNumber.position == SourcePosition(line: 2, column: 5))

        let missingComma = try self.parseError("INSERT INTO t VALUES (1 2);")
        #expect(missingComma.position == SourcePosition(line: 1, column: 25))

        let noParenthesis = try self.parseError("INSERT INTO t VALUES 1;")
        #expect(noParenthesis.reason == .unexpectedCharacter(found: "'1'", expected: "'(' to start a row"))
        #expect(noParenthesis.position == SourcePosition(line: 1, column: 22))

        let badWord = try self.parseError("INSERT INTO t VALUES (1, NOW());")
        #expect(badWord.reason == .unexpectedCharacter(found: "'NOW'", expected: "a value"))
        #expect(badWord.position == SourcePosition(line: 1, column: 26))

        let afterRow = try self.parseError("INSERT INTO t VALUES (1) (2);")
        #expect(afterRow.reason == .unexpectedCharacter(found: "'('", expected: "',' or ';' after a row"))
        #expect(afterRow.position == SourcePosition(line: 1, column: 26))

        let select = try self.parseError("INSERT INTO t SELECT 1;")
        #expect(select.position == SourcePosition(line: 1, column: 15))

        let control = try self.parseError("INSERT INTO t VALUES (\u{1}1);")
        #expect(control.reason == .unexpectedCharacter(found: "byte 0x01", expected: "a value"))
    }

    @Test func unterminatedCommentAndIdentifier() throws {
        let comment = try self.parseError("INSERT INTO t VALUES (1),\n /* no end")
        #expect(comment.reason == .unterminatedComment)
        #expect(comment.position == SourcePosition(line: 2, column: 2))
        let identifier = try self.parseError("INSERT INTO `t VALUES (1);")
        #expect(identifier.reason == .unterminatedIdentifier)
        #expect(identifier.position == SourcePosition(line: 1, column: 13))
        let skipped = try self.parseError("SET @x = 'abc;\n")
        #expect(skipped.reason == .unterminatedString)
        #expect(skipped.position == SourcePosition(line: 1, column: 10))
    }

    @Test func doubleDashWithoutSpaceIsNotAComment() throws {
        // `--1` is not a comment (MySQL needs whitespace after `--`) and not a number either.
        let error = try self.parseError("INSERT INTO t VALUES (--1);")
        #expect(error.reason == .unexpectedCharacter(found: "'-'", expected: "a number"))
        #expect(error.position == SourcePosition(line: 1, column: 23))
    }

    // MARK: Files

    @Test func fileReadInTinyBlocksGivesTheSameRowsAndPositions() throws {
        let text = """
            -- header
            INSERT INTO `salaries` VALUES (10001,60117,'1986-06-26','1987-06-26'),
            (10001,62102,'1987-06-26','1988-06-25'),
            (10002,'a\\\\ it''s /* not a comment */ b',  -3.25 , NULL);
            /* comment */ INSERT INTO x VALUES ('tail');
            INSERT INTO y VALUES ('unterminated
            """
        let directory = try DataTestFixtures.makeTemporaryDirectory()
        defer { directory.remove() }
        let path = (directory.path as NSString).appendingPathComponent("blocks.dump")
        try text.write(toFile: path, atomically: true, encoding: .utf8)

        func collect(_ parser: MySQLDumpParser) -> (rows: [DumpRow], error: DataFileError?) {
            var rows: [DumpRow] = []
            do {
                while let row = try parser.next() { rows.append(row) }
            } catch let error as DataFileError {
                return (rows, error)
            } catch {
                Issue.record("unexpected error \(error)")
            }
            return (rows, nil)
        }
        let inMemory = collect(MySQLDumpParser(text: text, name: path))
        #expect(inMemory.rows.count == 4)
        #expect(inMemory.rows[2].values == [10002, "a\\ it's /* not a comment */ b", .decimal("-3.25"), .null])
        #expect(inMemory.error?.reason == .unterminatedString)
        #expect(inMemory.error?.position == SourcePosition(line: 6, column: 23))
        for blockSize in [16, 17, 31, 64, 4096] {
            let parser = try MySQLDumpParser(contentsOfFile: path, blockSize: blockSize)
            #expect(parser.bytesTotal == Int64(text.utf8.count))
            let fromFile = collect(parser)
            #expect(fromFile.rows == inMemory.rows, "block size \(blockSize)")
            #expect(fromFile.error == inMemory.error, "block size \(blockSize)")
            #expect(parser.bytesRead == parser.bytesTotal)
        }
    }

    @Test func missingFileIsAClearError() throws {
        #expect {
            _ = try MySQLDumpParser(contentsOfFile: "/nonexistent/load_employees.dump")
        } throws: { error in
            (error as? DataLoadError)?.code == .missingFile
                && "\(error)".contains("/nonexistent/load_employees.dump")
        }
    }

    @Test func parsesTheTestDBFixture() throws {
        var seen: [String: Int] = [:]
        var rowsByFile: [String: [DumpRow]] = [:]
        for file in try EmployeesLoader.dumpFiles(in: DataTestFixtures.sampleDirectory) {
            let name = (file as NSString).lastPathComponent
            // A small block size puts block boundaries inside strings and escapes.
            for blockSize in [7, 4096] {
                let parser = try MySQLDumpParser(contentsOfFile: file, blockSize: blockSize)
                var rows: [DumpRow] = []
                while try parser.nextRow() {
                    rows.append(parser.currentRow)
                }
                #expect(parser.bytesRead == parser.bytesTotal, "\(name)")
                if let earlier = rowsByFile[name] {
                    #expect(rows.map(\.values) == earlier.map(\.values), "\(name), block size \(blockSize)")
                }
                rowsByFile[name] = rows
                seen[name] = rows.count
            }
        }
        #expect(seen == TestFixtures.TestDB.fileRowCounts)
        #expect(rowsByFile["load_employees.dump"]?.first?.values == [10001, "1953-09-02", "Georgi", "Facello", "M", "1986-06-26"])
        let departments = rowsByFile["load_departments.dump"]?.map(\.values) ?? []
        #expect(departments.suffix(3) == [["d010", #"Q\A & "Audit""#], ["d011", "Partners' Desk"], ["d012", "Vendors' Desk"]])
        #expect(rowsByFile["load_employees.dump"]?.last?.values == [10014, "1961-08-30", "Zoë", "Ångström", "F", "2000-01-28"])
        #expect(rowsByFile["load_titles.dump"]?.last?.values == [10014, "Technique Leader", "2000-01-28", .null])
    }
}
