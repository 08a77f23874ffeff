import Foundation
import Logging
import OPQCoordinator
import Testing
@testable import OPQDashboard

/// The HTTP exposure rule: loopback only unless CURVE and a token; with a token, every request needs it.
struct HTTPAccessTests {
    static let token = "s3cret-token-0123456789abcdef"

    @Test func onlyCURVEAndATokenTogetherAllowANonLoopbackAddress() throws {
        #expect(!HTTPAccess().allowsNonLoopback)
        #expect(!HTTPAccess(token: Self.token, curveIsOn: false).allowsNonLoopback)
        #expect(!HTTPAccess(token: nil, curveIsOn: true).allowsNonLoopback)
        #expect(HTTPAccess(token: Self.token, curveIsOn: true).allowsNonLoopback)
        #expect(try HTTPAddress(parsing: "0.0.0.0:7132", allowNonLoopback: true).host == "0.0.0.0")
        #expect(try HTTPAddress(parsing: "[::]:0", allowNonLoopback: true).host == "::")
        do {
            _ = try HTTPAddress(parsing: "0.0.0.0:7132")
            Issue.record("0.0.0.0 was accepted without CURVE and a token")
        } catch {
            #expect(error.description.contains("--curve-key") && error.description.contains("--http-token"), "\(error)")
        }
    }

    @Test func aHostNameThatMerelyStartsWith127IsNotLoopback() {
        #expect(throws: HTTPAddressError.self) { try HTTPAddress(parsing: "127.example.org:7132") }
        #expect(!HTTPAddress.isLoopback("127.example.org") && HTTPAddress.isLoopback("127.0.0.2") && HTTPAddress.isLoopback("::1"))
    }

    @Test func withATokenOnlyRequestsCarryingItAreAdmitted() {
        let access = HTTPAccess(token: Self.token)
        #expect(access.admits(authorization: "Bearer \(Self.token)"))
        #expect(access.admits(authorization: "bearer \(Self.token)"))
        let basic = Data("anyone:\(Self.token)".utf8).base64EncodedString()
        #expect(access.admits(authorization: "Basic \(basic)"))
        for refused in [nil, "", "Bearer", "Bearer \(Self.token)x", "Bearer \(Self.token.dropLast())", "Token \(Self.token)",
                        "Basic \(Data("anyone:wrong".utf8).base64EncodedString())", "Basic not-base64"] {
            #expect(!access.admits(authorization: refused), "\(refused ?? "nil") was admitted")
        }
        #expect(HTTPAccess().admits(authorization: nil))
    }

    @Test func theComparisonIsByteExactWhateverTheLengths() {
        #expect(HTTPAccess.constantTimeEqual(Array("abc".utf8), Array("abc".utf8)))
        #expect(!HTTPAccess.constantTimeEqual(Array("abc".utf8), Array("abd".utf8)))
        #expect(!HTTPAccess.constantTimeEqual(Array("abc".utf8), Array("abc\0".utf8)))
        #expect(!HTTPAccess.constantTimeEqual([], Array("a".utf8)))
    }

    @Test func theTokenComesFromAPrivateFileOrTheEnvironment() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("opq-token-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/token"
        _ = FileManager.default.createFile(atPath: file, contents: Data("\(Self.token)\n".utf8), attributes: [.posixPermissions: 0o600])
        #expect(try HTTPAccess.token(file: file, environment: [:]) == Self.token)
        #expect(try HTTPAccess.token(file: nil, environment: [HTTPAccess.tokenEnvironment: Self.token]) == Self.token)
        #expect(try HTTPAccess.token(file: nil, environment: [:]) == nil)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file)
        #expect { try HTTPAccess.token(file: file, environment: [:]) } throws: { "\($0)".contains("chmod 600") }
        #expect { try HTTPAccess.token(file: nil, environment: [HTTPAccess.tokenEnvironment: "short"]) } throws: { "\($0)".contains("at least 16") }
        #expect(throws: HTTPAddressError.self) { try HTTPAccess.token(file: directory + "/missing", environment: [:]) }
    }
}
