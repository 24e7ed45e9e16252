import NIOHTTP1

/// What the connection does with a request head before routing it: the rules of RFC 9112 that
/// the parser leaves to the server.
///
/// - A request without exactly one `Host` field (HTTP/1.1), or with more than one (HTTP/1.0),
///   is refused with 400 and the connection closes (RFC 9112 §3.2): two proxies that pick
///   different `Host` values would route one request two ways.
/// - A request that asks to switch protocols (an `Upgrade` field, or `CONNECT`) is answered as
///   any other and the connection then closes: Spout upgrades to nothing, and NIO's parser
///   reads no request after one that asked, so a kept connection would go deaf and hold the
///   proxy's next request (someone else's) until it times out.
enum RequestHeadRule: Equatable {
    case proceed
    case answerThenClose
    case refuse(String)

    init(_ head: HTTPRequestHead) {
        let hosts = head.headers["Host"].count
        if hosts > 1 {
            self = .refuse("a request carries one Host field, not \(hosts)")
            return
        }
        if hosts == 0 && (head.version.major > 1 || (head.version.major == 1 && head.version.minor >= 1)) {
            self = .refuse("a request carries one Host field (HTTP/1.1), and this one has none")
            return
        }
        if head.method == .CONNECT || head.headers.contains(name: "Upgrade") {
            self = .answerThenClose
            return
        }
        self = .proceed
    }
}
