#if canImport(Glibc)
import Glibc
#endif

/// Where the dashboard listens: `HOST:PORT`, loopback only unless ``HTTPAccess/allowsNonLoopback``.
public struct HTTPAddress: Sendable, Equatable, CustomStringConvertible {
    /// The default port of `--http`.
    public static let defaultPort = 7132

    public let host: String
    /// 0 = any free port (the bound one is printed at start).
    public let port: Int

    /// Parses `HOST:PORT` (`[::1]:PORT` for IPv6), refusing anything but a loopback host unless
    /// `allowNonLoopback` (CURVE and a token: ``HTTPAccess/allowsNonLoopback``): the dashboard shows
    /// every command and its output.
    public init(parsing text: String, allowNonLoopback: Bool = false) throws(HTTPAddressError) {
        var host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw HTTPAddressError(description: "--http '\(text)': expected [IPV6]:PORT, e.g. [::1]:\(HTTPAddress.defaultPort)")
            }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                throw HTTPAddressError(description: "--http '\(text)': expected HOST:PORT, e.g. 127.0.0.1:\(HTTPAddress.defaultPort)")
            }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard let port = Int(portText), (0...65_535).contains(port) else {
            throw HTTPAddressError(description: "--http '\(text)': the port must be a number from 0 to 65535 (0 = any free port)")
        }
        if host == "localhost" { host = "127.0.0.1" }
        guard !host.isEmpty else {
            throw HTTPAddressError(description: "--http '\(text)': the host is missing, e.g. 127.0.0.1:\(HTTPAddress.defaultPort)")
        }
        guard HTTPAddress.isLoopback(host) || allowNonLoopback else {
            throw HTTPAddressError(description: """
                refusing to serve HTTP on '\(text)': it is not a loopback address, and the dashboard shows every \
                command and its output. A non-loopback --http needs both CURVE on the coordinator's endpoints \
                (--curve-key) and a token for HTTP (--http-token FILE or $\(HTTPAccess.tokenEnvironment)). Otherwise \
                use 127.0.0.1:PORT and reach it through an SSH tunnel \
                (ssh -L \(HTTPAddress.defaultPort):127.0.0.1:\(HTTPAddress.defaultPort) HOST).
                """)
        }
        self.host = String(host)
        self.port = port
    }

    /// Whether `host` is a loopback address literal (`::1`, `127.x.y.z`); host names other than
    /// `localhost` are not, even when they start with "127.".
    static func isLoopback(_ host: Substring) -> Bool {
        var address = in_addr()
        return host == "::1" || (inet_pton(AF_INET, String(host), &address) == 1 && UInt32(bigEndian: address.s_addr) >> 24 == 127)
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// A `--http` address that cannot be used, with what to do instead.
public struct HTTPAddressError: Error, CustomStringConvertible {
    public let description: String
}
