import OPQCore
import Testing

/// The varints StoryBook packs steps with and the Submit encoder writes (protobuf's bytes).
@Suite struct LEB128Tests {
    @Test func varintsHaveProtobufsBytesAndLengths() {
        let cases: [(UInt64, [UInt8])] = [(0, [0]), (1, [1]), (127, [0x7F]), (128, [0x80, 0x01]), (300, [0xAC, 0x02]),
                                          (UInt64.max, [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01])]
        for (value, expected) in cases {
            var bytes: [UInt8] = []
            LEB128.append(value, to: &bytes)
            #expect(bytes == expected, "\(value)")
        }
    }

    @Test func zigzagKeepsSmallNegativesShortAndRoundTripsTheExtremes() {
        #expect([0, -1, 1, -2, 2].map(LEB128.zigzag) == [0, 1, 2, 3, 4])
        for value: Int64 in [.min, .max, -1, 0, 1, 1 << 40, -(1 << 40)] {
            #expect(LEB128.unzigzag(LEB128.zigzag(value)) == value)
        }
        #expect(LEB128.zigzag(.min) == .max)
    }
}
