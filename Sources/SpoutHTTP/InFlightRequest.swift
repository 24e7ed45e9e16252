import HTTPTypes
import NIOCore
import NIOHTTP1
import Tracing

/// One request on a connection and the response sent for it: what ``HTTPConnectionHandler``
/// knows of it, confined to the connection's event loop. (``ResponseExchange`` is what a body
/// producer answers through.)
final class InFlightRequest {
    let number: Int
    let id: String
    let method: HTTPMethod
    let uri: String
    let path: Substring
    let queryString: Substring?
    let version: HTTPVersion
    /// The request's header fields, in order and spelled as received.
    let requestFields: HTTPFields
    let start: NIODeadline
    /// This server's span of the request (W3C Trace Context).
    let trace: RequestTrace
    /// The CORS fields every response head of this request carries (empty when CORS is off).
    let corsHeaders: HTTPFields
    /// The template of the route that answers (`unmatched` when none does), for metrics.
    var route = "unmatched"
    /// The largest body this request may send: its route's own limit, else the server's
    /// (``ServerConfiguration/maximumBodySize``); set when its head arrives.
    var maximumBodySize = 0
    /// The route found when the head arrived (only for a request with a body while some route
    /// has a body limit of its own: the limit depends on the route), so dispatching it does not
    /// look the route up again.
    var routeMatch: Router.Match?
    /// The fields every error answer of the route carries (``Route/errorFields``), once routed.
    var errorFields = HTTPFields()
    /// The status code sent (0 until a response starts), for the log and metrics.
    var status = 0
    var bytes = 0
    var rows: Int?
    var sink: StreamingResponseSink?
    var streamHead: HTTPResponseHead?
    /// The task answering the request, while it runs (cleared once it ends: a finished task
    /// keeps its frames' memory until its last handle goes, and an event stream outlives it).
    var task: Task<Void, Never>?
    /// The stream counted against the per-address cap, released when the exchange ends.
    var streamTicket: StreamAdmission.Ticket?
    /// The bytes of the body held (``RequestBodyBudget``), given back when the exchange ends.
    var bodyReservation: RequestBodyBudget.Reservation?
    /// The body of a route that streams it (``Route/streamsBody``); whether it is still
    /// arriving is the connection's ``HTTPConnectionStateMachine/BodyIn``.
    var bodyStream: RequestBodyStream?

    var isHead: Bool { self.method == .HEAD }

    /// Whether the request sends a body: a `Content-Length` other than 0, or chunks.
    var sendsBody: Bool {
        self.requestFields[values: .contentLength].first.map { $0 != "0" } ?? self.requestFields.contains(.transferEncoding)
    }

    init(number: Int, head: HTTPRequestHead, cors: CORSPolicy, tracer: (any Tracer)?) {
        self.number = number
        self.requestFields = HTTPFields(head.headers)
        self.id = RequestID.make(from: self.requestFields[values: .requestID].first)
        self.trace = RequestTrace(fields: self.requestFields, method: head.method.rawValue, tracer: tracer)
        self.method = head.method
        let uri = head.uri
        self.uri = uri
        // Found in the bytes: `?` is ASCII, and a string index from the UTF-8 view cuts the
        // string itself (the character search walked every grapheme of the path).
        if let question = uri.utf8.firstIndex(of: UInt8(ascii: "?")) {
            self.path = uri[..<question]
            self.queryString = uri[uri.utf8.index(after: question)...]
        } else {
            self.path = uri[...]
            self.queryString = nil
        }
        self.version = head.version
        self.start = .now()
        self.corsHeaders = cors.responseHeaders(origin: self.requestFields[values: .origin].first)
    }
}
