#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Hummingbird

/// Who may use the HTTP server. The dashboard shows every command and its output, so the rule is:
/// loopback only, unless the coordinator's endpoints are CURVE-protected AND a token is set; with a
/// token, every request must carry it (`Authorization: Bearer TOKEN`; browsers may send it as the
/// password of HTTP Basic authentication, any user name), also on loopback.
public struct HTTPAccess: Sendable {
    /// The environment variable that may hold the token itself (instead of `--http-token FILE`).
    public static let tokenEnvironment = "OPQ_HTTP_TOKEN"
    /// Shortest token accepted, in bytes (a guessable token is no protection).
    public static let minimumTokenLength = 16

    /// The token requests must carry; nil = none (then only loopback may be bound).
    public let token: String?
    /// Whether CURVE protects the coordinator's own endpoints.
    public let curveIsOn: Bool

    /// Access with `token` (nil = no token), for a coordinator with or without CURVE.
    public init(token: String? = nil, curveIsOn: Bool = false) {
        self.token = token
        self.curveIsOn = curveIsOn
    }

    /// Whether a non-loopback HTTP address may be bound: CURVE and a token, both.
    public var allowsNonLoopback: Bool { curveIsOn && token != nil }

    /// The token from `file` (`--http-token FILE`: its first line, mode 0600 or stricter) or else from
    /// ``tokenEnvironment``; nil when neither is given.
    public static func token(file: String?, environment: [String: String]) throws(HTTPAddressError) -> String? {
        let text: String
        let source: String
        if let file {
            var info = stat()
            guard stat(file, &info) == 0, let contents = FileManager.default.contents(atPath: file) else {
                throw HTTPAddressError(description: "--http-token '\(file)': cannot read the file: \(String(cString: strerror(errno)))")
            }
            guard info.st_mode & 0o077 == 0 else {
                throw HTTPAddressError(description: """
                    --http-token '\(file)': other users may read the token (mode \(String(info.st_mode & 0o777, radix: 8))); \
                    run chmod 600 '\(file)' first
                    """)
            }
            text = String(decoding: contents, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
            source = "--http-token '\(file)'"
        } else if let value = environment[tokenEnvironment] {
            text = value
            source = tokenEnvironment
        } else {
            return nil
        }
        let token = text.trimmingCharacters(in: .whitespaces)
        guard token.utf8.count >= minimumTokenLength, token.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
            throw HTTPAddressError(description: """
                \(source): the token must be at least \(minimumTokenLength) printable ASCII characters without spaces, \
                e.g. made by: head -c 32 /dev/urandom | base64 > token && chmod 600 token
                """)
        }
        return token
    }

    /// Whether a request with this `Authorization` header value may be served: always without a token;
    /// with one, `Bearer TOKEN` or `Basic base64(USER:TOKEN)`. The comparison takes the same time
    /// wherever the first difference is.
    public func admits(authorization: String?) -> Bool {
        guard let token else { return true }
        guard let authorization else { return false }
        let parts = authorization.split(separator: " ", maxSplits: 1)
        guard parts.count == 2 else { return false }
        let scheme = parts[0].lowercased(), credentials = parts[1].trimmingCharacters(in: .whitespaces)
        switch scheme {
        case "bearer":
            return Self.constantTimeEqual(Array(credentials.utf8), Array(token.utf8))
        case "basic":
            guard let decoded = Data(base64Encoded: credentials), let colon = decoded.firstIndex(of: UInt8(ascii: ":")) else { return false }
            return Self.constantTimeEqual(Array(decoded[decoded.index(after: colon)...]), Array(token.utf8))
        default:
            return false
        }
    }

    /// Equality of two byte strings in time that depends only on their lengths.
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(truncatingIfNeeded: a.count ^ b.count)
        difference |= a.count == b.count ? 0 : 1
        for index in 0..<max(a.count, b.count) {
            difference |= (index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0)
        }
        return difference == 0
    }
}

/// Refuses requests without the token (``HTTPAccess/admits(authorization:)``) with 401 and what to send.
struct TokenMiddleware<Context: RequestContext>: RouterMiddleware {
    let access: HTTPAccess

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard access.admits(authorization: request.headers[.authorization]) else {
            var response = DashboardServer.error(.unauthorized, """
                this coordinator's HTTP server needs its token: send 'Authorization: Bearer TOKEN' (the contents of \
                --http-token FILE or $\(HTTPAccess.tokenEnvironment)); a browser may give it as the password, any user name
                """)
            response.headers[.wwwAuthenticate] = "Basic realm=\"opq\", charset=\"UTF-8\""
            return response
        }
        return try await next(request, context)
    }
}
