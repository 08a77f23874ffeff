import Testing
@testable import OPQWorker

@Suite("Tail buffer")
struct TailBufferTests {
    @Test("keeps the last bytes across wrap-around, in order")
    func wraps() {
        var buffer = TailBuffer(capacity: 5)
        buffer.append(Array("abc".utf8))
        #expect(buffer.bytes == Array("abc".utf8))
        buffer.append(Array("defg".utf8))
        #expect(buffer.bytes == Array("cdefg".utf8))
        buffer.append(Array("hi".utf8))
        #expect(buffer.bytes == Array("efghi".utf8))
        buffer.append(Array("0123456789".utf8))
        #expect(buffer.bytes == Array("56789".utf8))
        #expect(buffer.totalCount == 19 && buffer.droppedCount == 14)
    }

    @Test("matches a reference for many random appends")
    func reference() {
        var generator = SystemRandomNumberGenerator()
        var buffer = TailBuffer(capacity: 97)
        var everything: [UInt8] = []
        for _ in 0 ..< 500 {
            let chunk = (0 ..< Int.random(in: 0 ... 150, using: &generator)).map { _ in UInt8.random(in: 0 ... 255, using: &generator) }
            buffer.append(chunk)
            everything += chunk
            #expect(buffer.bytes == Array(everything.suffix(97)))
        }
    }
}
