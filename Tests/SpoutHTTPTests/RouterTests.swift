import SpoutCore
import Testing

@testable import SpoutHTTP

@Suite("Router")
struct RouterTests {
    private func router() -> Router {
        var router = Router()
        router.add(.get, "/employees") { _ in .text("list") }
        router.add(.post, "/employees") { _ in .text("create") }
        router.add(.get, "/employees/{employeeNumber}") { _ in .text("one") }
        router.add(.delete, "/employees/{employeeNumber}") { _ in .noContent() }
        router.add(.get, "/employees/count") { _ in .text("count") }
        router.add(.get, "/employees/{employeeNumber}/titles") { _ in .text("titles") }
        router.add(.get, "/departments/{dept}/employees/{id}") { _ in .text("nested") }
        return router
    }

    private func template(_ match: Router.Match) -> String? {
        if case .found(let route, _) = match { return route.template }
        return nil
    }

    @Test func staticSegmentBeatsKey() throws {
        let router = self.router()
        #expect(self.template(router.match(.get, path: "/employees/count")) == "/employees/count")
        #expect(self.template(router.match(.get, path: "/employees/10001")) == "/employees/{employeeNumber}")
    }

    @Test func keysAreExtractedAndDecoded() throws {
        let router = self.router()
        guard case .found(let route, let keys) = router.match(.get, path: "/departments/d%20005/employees/42") else {
            Issue.record("no match")
            return
        }
        #expect(route.template == "/departments/{dept}/employees/{id}")
        #expect(keys == ["dept": "d 005", "id": "42"])
        #expect(route.keys == ["dept", "id"])
    }

    @Test func backtracksFromLiteralToKey() throws {
        // "count" matches the literal branch, which has no "titles" child: the key branch wins.
        let router = self.router()
        guard case .found(let route, let keys) = router.match(.get, path: "/employees/count/titles") else {
            Issue.record("no match")
            return
        }
        #expect(route.template == "/employees/{employeeNumber}/titles")
        #expect(keys == ["employeeNumber": "count"])
    }

    @Test func unknownPathIsNotFound() {
        let router = self.router()
        for path in ["/", "/nothing", "/employees/1/2/3", "/employees/1/salaries"] {
            guard case .notFound = router.match(.get, path: path) else {
                Issue.record("\(path) matched")
                continue
            }
        }
    }

    @Test func otherMethodIsMethodNotAllowedWithAllow() {
        let router = self.router()
        guard case .methodNotAllowed(let allowed) = router.match(.put, path: "/employees/7") else {
            Issue.record("expected 405")
            return
        }
        #expect(allowed == [.delete, .get, .head])
        guard case .methodNotAllowed(let listAllowed) = router.match(.delete, path: "/employees") else {
            Issue.record("expected 405")
            return
        }
        #expect(listAllowed == [.get, .head, .post])
    }

    @Test func headUsesGet() {
        let router = self.router()
        #expect(self.template(router.match(.head, path: "/employees/7")) == "/employees/{employeeNumber}")
        guard case .methodNotAllowed = router.match(.head, path: "/only-post") else {
            if case .notFound = router.match(.head, path: "/only-post") { return }
            Issue.record("unexpected")
            return
        }
    }

    @Test func headWithoutGetIsNotAllowed() {
        var router = Router()
        router.add(.post, "/submit") { _ in .noContent() }
        guard case .methodNotAllowed(let allowed) = router.match(.head, path: "/submit") else {
            Issue.record("expected 405")
            return
        }
        #expect(allowed == [.post])
    }

    @Test func trailingSlashAndQueryFreePath() {
        let router = self.router()
        #expect(self.template(router.match(.get, path: "/employees/")) == "/employees")
    }
}
