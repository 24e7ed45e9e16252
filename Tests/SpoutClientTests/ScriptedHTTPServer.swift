import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// An HTTP server on 127.0.0.1 whose answers a test writes byte by byte: a head, some chunks,
/// a pause until the test says so, a close in the middle of a body.
///
/// Each connection's request head is read, recorded in ``requests``, and handed with a
/// ``ScriptedConnection`` to the test's `answer` closure; the connection closes when `answer`
/// returns, after everything it wrote has reached the socket. Call ``stop()`` at the end of the test.
final class ScriptedHTTPServer: Sendable {
    /// A request as received: request line and headers.
    struct Request: Sendable {
        var method: String
        var target: String
        var headers: [String: String]

        /// A header, by its lowercased name.
        func header(_ name: String) -> String? { self.headers[name.lowercased()] }
    }

    typealias Answer = @Sendable (Request, ScriptedConnection) async throws -> Void

    let port: Int
    private let channel: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>
    private let received = Mutex<[Request]>([])
    private let serving = Mutex<Task<Void, Never>?>(nil)

    /// The requests received so far, in order.
    var requests: [Request] { self.received.withLock { $0 } }

    private init(channel: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>, port: Int) {
        self.channel = channel
        self.port = port
    }

    /// Starts listening on a free port and answers every request with `answer`.
    static func start(_ answer: @escaping Answer) async throws -> ScriptedHTTPServer {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: "127.0.0.1", port: 0) { child in
                child.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: child)
                }
            }
        let server = ScriptedHTTPServer(channel: channel, port: channel.channel.localAddress?.port ?? 0)
        let task = Task<Void, Never> {
            _ = try? await channel.executeThenClose { connections in
                try await withThrowingDiscardingTaskGroup { group in
                    for try await connection in connections {
                        group.addTask { await server.serve(connection, answer: answer) }
                    }
                }
            }
        }
        server.serving.withLock { $0 = task }
        return server
    }

    /// Stops listening and waits for the server's task to end.
    func stop() async {
        try? await self.channel.channel.close()
        let task = self.serving.withLock { $0 }
        task?.cancel()
        await task?.value
    }

    private func serve(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>, answer: Answer) async {
        try? await connection.executeThenClose { inbound, outbound in
            var text = ""
            for try await buffer in inbound {
                text += String(buffer: buffer)
                if text.contains("\r\n\r\n") { break }
            }
            guard let request = Self.parse(text) else { return }
            self.received.withLock { $0.append(request) }
            try await answer(request, ScriptedConnection(outbound: outbound, channel: connection.channel))
            // A full close fails the writes still pending in the channel (a slow client's): shut
            // the output down once they are written, so the client reads all that was sent.
            outbound.finish()
            try? await connection.channel.close(mode: .output)
        }
    }

    private static func parse(_ text: String) -> Request? {
        let lines = text.components(separatedBy: "\r\n")
        let requestLine = lines.first?.split(separator: " ") ?? []
        guard requestLine.count >= 2 else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Request(method: String(requestLine[0]), target: String(requestLine[1]), headers: headers)
    }
}
