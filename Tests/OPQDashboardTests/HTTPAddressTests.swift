import Testing
@testable import OPQDashboard

struct HTTPAddressTests {
    @Test func loopbackAddressesAreAccepted() throws {
        let v4 = try HTTPAddress(parsing: "127.0.0.1:7132")
        #expect(v4.host == "127.0.0.1" && v4.port == 7132)
        #expect(try HTTPAddress(parsing: "localhost:0").host == "127.0.0.1")
        let v6 = try HTTPAddress(parsing: "[::1]:8080")
        #expect(v6.host == "::1" && v6.port == 8080 && v6.description == "[::1]:8080")
    }

    @Test func anyOtherAddressIsRefusedWithWhatToDoInstead() {
        for text in ["0.0.0.0:7132", "192.168.1.2:7132", "[::]:7132", "example.org:80"] {
            do {
                _ = try HTTPAddress(parsing: text)
                Issue.record("\(text) was accepted")
            } catch {
                #expect(error.description.contains("not a loopback address") && error.description.contains("SSH tunnel"), "\(error)")
            }
        }
    }

    @Test func malformedAddressesSayWhatIsExpected() {
        for text in ["7132", "127.0.0.1:", "127.0.0.1:99999", "[::1]7132"] {
            #expect(throws: HTTPAddressError.self) { try HTTPAddress(parsing: text) }
        }
    }
}
