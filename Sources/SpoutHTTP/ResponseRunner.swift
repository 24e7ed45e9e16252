import HTTPTypes
import NIOCore

/// Runs a route handler for one exchange and turns its ``Response`` into writes on the
/// connection's event loop.
///
/// A body known in full is sent as it is; a produced body (``Response/Body/produced(_:)``) is
/// handed the ``ResponseExchange`` and makes the response itself. An error thrown by the
/// handler, or by a producer before it answered, becomes the error response.
struct ResponseRunner: Sendable {
    let exchange: ResponseExchange

    func run(route: Route, request: Request) async {
        do {
            let response = try await route.handler(request)
            switch response.body {
            case .empty:
                self.exchange.send(status: response.status, headers: response.headers, body: [])
            case .bytes(let bytes, let contentType):
                var headers = response.headers
                headers.replaceOrAdd(.contentType, contentType)
                self.exchange.send(status: response.status, headers: headers, body: bytes)
            case .produced(let producer):
                try await producer.produce(status: response.status, headers: response.headers, through: self.exchange)
            }
        } catch {
            self.exchange.sendFailure(error)
        }
    }
}
