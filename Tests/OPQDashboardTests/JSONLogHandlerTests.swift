import Foundation
import Logging
import Testing
@testable import OPQLogging

struct JSONLogHandlerTests {
    @Test func aLineIsOneJSONObjectWithMetadataKeysAsFields() throws {
        let line = JSONLogHandler.line(
            time: Date(timeIntervalSince1970: 1_700_000_000.25), level: .warning, label: "opq.coordinator",
            message: "worker \"lost\"\nagain",
            metadata: ["worker.id": "w1", "operation.id": .stringConvertible(42), "message": "clash",
                       "held": .array(["1", "2"]), "bell": "\u{7}"])
        #expect(line.hasSuffix("}\n") && line.filter { $0 == "\n" }.count == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["level"] as? String == "warning" && object["label"] as? String == "opq.coordinator")
        #expect(object["message"] as? String == "worker \"lost\"\nagain")
        #expect(object["worker.id"] as? String == "w1" && object["operation.id"] as? String == "42")
        #expect(object["metadata.message"] as? String == "clash" && object["held"] as? [String] == ["1", "2"])
        #expect(object["bell"] as? String == "\u{7}")
        #expect(object["time"] as? String == "2023-11-14T22:13:20.250Z")
    }
}
