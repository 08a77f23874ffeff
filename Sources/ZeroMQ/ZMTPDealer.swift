#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One DEALER connection speaking ZMTP 3.1 with the NULL mechanism itself (rfc.zeromq.org 23/ZMTP,
/// 37/ZMTP), without libzmq: no library to load, no context, no I/O thread. For a short command that asks
/// a coordinator on this machine a question or two (`opq status`, issue 19: libzmq's libraries, context
/// and threads were ≈ 2.8 of its ≈ 5.8 ms).
///
/// Only what such a command needs: `ipc://PATH` and `tcp://127.x.x.x:PORT`, no security (a coordinator
/// with CURVE keys is told apart by its greeting and reported, ``ZMTPError/Problem/mechanism(_:)``), one
/// connection, no reconnect once connected. Like libzmq's DEALER it connects in the background of the
/// first send: a peer that is not there yet is tried again every 100 ms until that send's deadline, so
/// "no coordinator" is a deadline passing, as with libzmq.
///
/// The greeting goes out in two parts (as libzmq sends it), then the READY command; the peer's greeting
/// and READY are checked before the first message is sent. What the peer sends is bounded: a frame over
/// `maxFrameBytes` or a message over `maxFrames` frames or `maxMessageBytes` bytes ends the connection
/// with an error as soon as its header is read (nothing is allocated for it), and every wait ends at the
/// caller's deadline. A PING is answered with PONG; other commands after READY are ignored (ERROR ends
/// the connection). Use from one thread at a time.
public final class ZMTPDealer {
    /// The endpoint connected to.
    public let endpoint: String
    private let address: Address
    private let maxFrameBytes: Int
    private let maxFrames: Int
    private let maxMessageBytes: Int
    private var fd: Int32 = -1
    private var phase = Phase.greeting
    /// Bytes read and not parsed yet: `input[inputStart...]`.
    private var input: [UInt8] = []
    private var inputStart = 0
    /// Bytes to write: `output[outputStart...]`.
    private var output: [UInt8] = []
    private var outputStart = 0
    /// The frames of the message being received, and their bytes.
    private var frames: [[UInt8]] = []
    private var messageBytes = 0
    /// The error that ended the connection; every later call throws it.
    private var failure: ZMTPError?

    /// Where the peer is.
    enum Address {
        case unix(path: String)
        case ipv4(address: in_addr, port: UInt16)
    }

    /// How far the peer's side of the handshake has come.
    enum Phase: CustomStringConvertible {
        case greeting, handshake, ready

        var description: String {
            switch self {
            case .greeting: "during the ZMTP greeting"
            case .handshake: "during the ZMTP handshake (before READY)"
            case .ready: "before answering"
            }
        }
    }

    /// How long to wait before trying a refused connection again (libzmq's default reconnect interval).
    static let retryMilliseconds = 100
    /// The greeting's signature and major version: what goes out before the peer's greeting is read.
    static let versionedSignatureBytes = 11
    /// The most bytes one read takes.
    static let readBytes = 65_536
    /// The largest command accepted from the peer (READY with its properties; PING, ERROR are smaller).
    static let maxCommandBytes = 65_536

    /// A connection to `endpoint`, or nil when it is not an endpoint this type speaks to (anything but
    /// `ipc://PATH` and `tcp://` to a numeric 127.0.0.0/8 address with a port): use libzmq for those.
    /// Nothing is connected until the first ``send(_:until:)``.
    public init?(endpoint: String, maxFrameBytes: Int, maxFrames: Int, maxMessageBytes: Int) {
        guard let address = Self.address(endpoint) else { return nil }
        self.endpoint = endpoint
        self.address = address
        self.maxFrameBytes = maxFrameBytes
        self.maxFrames = maxFrames
        self.maxMessageBytes = maxMessageBytes
    }

    deinit { close() }

    /// Closes the connection (a later call throws ``ZMTPError/Problem/closed(during:)``).
    public func close() {
        if fd >= 0 { _ = closeDescriptor(fd) }
        fd = -1
        if failure == nil { failure = ZMTPError(endpoint: endpoint, .closed(during: "(closed by this client)")) }
    }

    /// The address of `endpoint` when this type can connect to it.
    static func address(_ endpoint: String) -> Address? {
        guard let parsed = try? Endpoint(parsing: endpoint) else { return nil }
        switch parsed.address {
        case .ipc(let path):
            // libzmq's own forms (`*`, the abstract namespace `@name`) and a path too long for sun_path stay with libzmq.
            guard path != "*", !path.hasPrefix("@"), path.utf8.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path) else { return nil }
            return .unix(path: path)
        case .tcp(.ipv4(let text), let port?):
            var address = in_addr()
            guard inet_pton(AF_INET, text, &address) == 1, UInt32(bigEndian: address.s_addr) >> 24 == 127 else { return nil }
            return .ipv4(address: address, port: port)
        default:
            return nil
        }
    }

    // MARK: Sending

    /// Queues `frames` as one message and writes them, connecting first if needed; false when the
    /// deadline passed first (no peer to connect to, or one that does not read).
    public func send(_ frames: [[UInt8]], until deadline: ContinuousClock.Instant) throws(ZMTPError) -> Bool {
        if let failure { throw failure }
        if fd < 0 {
            // The greeting in two parts, as libzmq sends it: its signature and major version, then —
            // once the peer's whole greeting came (a libzmq peer sends it on reading those 11 bytes) —
            // the rest with the mechanism. So a peer that wants CURVE is known by its greeting: libzmq
            // closes the connection when it reads a NULL greeting, and may do so before its own greeting
            // went out. Messages wait for the peer's READY, as libzmq's own DEALER's do: libzmq 4.3.4
            // closes a connection whose first message arrives in the same read as the greeting and READY.
            guard try connect(until: deadline) else { return false }
            output = Array(Self.greeting[..<Self.versionedSignatureBytes])
            guard try flush(until: deadline), try awaitHandshake(until: deadline, through: .greeting) else { return false }
            output = Array(Self.greeting[Self.versionedSignatureBytes...]) + Self.ready
            guard try flush(until: deadline), try awaitHandshake(until: deadline, through: .handshake) else { return false }
        }
        for (k, frame) in frames.enumerated() {
            Self.appendFrame(frame, more: k < frames.count - 1, command: false, to: &output)
        }
        return try flush(until: deadline)
    }

    /// Writes what is queued until done or until `deadline`; false when the deadline passed first.
    private func flush(until deadline: ContinuousClock.Instant) throws(ZMTPError) -> Bool {
        while outputStart < output.count {
            let written = output.withUnsafeBytes { bytes in
                sendBytes(fd, bytes.baseAddress! + outputStart, bytes.count - outputStart, Int32(MSG_NOSIGNAL))
            }
            if written > 0 {
                outputStart += written
                continue
            }
            let code = errno
            if code == EINTR { continue }
            guard code == EAGAIN || code == EWOULDBLOCK else {
                // The peer is gone (EPIPE, ECONNRESET): what it said before closing tells why, if anything.
                try explainClose(code)
            }
            guard try wait(for: Int16(POLLOUT), until: deadline) else { return false }
        }
        output.removeAll(keepingCapacity: true)
        outputStart = 0
        return true
    }

    /// Throws why the peer closed the connection: an error in what it sent before (a greeting with another
    /// mechanism, an ERROR command), else ``ZMTPError/Problem/closed(during:)``.
    private func explainClose(_ code: Int32) throws(ZMTPError) -> Never {
        var chunk = [UInt8](repeating: 0, count: 4_096)
        while input.count - inputStart < Self.maxCommandBytes {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            guard count > 0 else { break }
            input += chunk[..<count]
        }
        _ = try parseMessage()
        throw fail(code == EPIPE || code == ECONNRESET ? closed : .system(call: "send", code: code))
    }

    // MARK: Receiving

    /// What one wait for a message gave.
    public enum Received {
        /// A whole message, its frames in order.
        case message([[UInt8]])
        /// `deadline` passed first.
        case timedOut
        /// The `wake` descriptor turned readable first.
        case woken
    }

    /// The next message from the peer, waiting until `deadline` (nil = no limit) or until `wake` (a file
    /// descriptor) is readable. Checks the peer's greeting and READY first, answers PING.
    public func receive(until deadline: ContinuousClock.Instant?, wake: Int32? = nil) throws(ZMTPError) -> Received {
        if let failure { throw failure }
        while true {
            if let message = try parseMessage() { return .message(message) }
            if outputStart < output.count, let deadline { _ = try flush(until: deadline) }
            if fd < 0 { return .timedOut }
            if let ended = try read(until: deadline, wake: wake) { return ended }
        }
    }

    /// Why the peer closed the connection, from where the connection was: right after a signature (all a
    /// libzmq peer that wants CURVE sends before it reads the NULL greeting and closes), during the
    /// handshake, between messages or in one.
    private var closed: ZMTPError.Problem {
        if phase == .greeting, input.count - inputStart >= 10 { return .nullRefused }
        return .closed(during: phase != .ready ? phase.description
            : frames.isEmpty && inputStart == input.count ? "before answering" : "in the middle of a message")
    }

    /// Waits until the peer's side of the handshake is past `phase` (its greeting; its READY); false when
    /// `deadline` passed first.
    private func awaitHandshake(until deadline: ContinuousClock.Instant, through phase: Phase) throws(ZMTPError) -> Bool {
        while self.phase == phase || (phase == .handshake && self.phase == .greeting) {
            if try parseHandshake() { continue }
            if try read(until: deadline, wake: nil) != nil { return false }
        }
        return true
    }

    /// Reads what the peer sent into `input` (nil), or returns how the wait ended first.
    private func read(until deadline: ContinuousClock.Instant?, wake: Int32?) throws(ZMTPError) -> Received? {
        while true {
            var items = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
            if let wake { items.append(pollfd(fd: wake, events: Int16(POLLIN), revents: 0)) }
            let ready = poll(&items, nfds_t(items.count), deadline.map(Poller.milliseconds(until:)) ?? -1)
            if ready < 0 {
                if errno == EINTR { continue }
                throw fail(.system(call: "poll", code: errno))
            }
            if ready == 0 { return .timedOut }
            if items[0].revents != 0 {
                if inputStart > 0, inputStart >= input.count / 2 {
                    input.removeFirst(inputStart)
                    inputStart = 0
                }
                let before = input.count
                input += repeatElement(0, count: Self.readBytes)
                let count = input.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + before, Self.readBytes, Int32(MSG_DONTWAIT)) }
                input.removeLast(Self.readBytes - max(count, 0))
                if count > 0 { return nil }
                let code = errno
                if count < 0, code == EINTR || code == EAGAIN || code == EWOULDBLOCK { continue }
                throw fail(count == 0 || code == ECONNRESET ? closed : .system(call: "recv", code: code))
            }
            if items.count > 1, items[1].revents != 0 { return .woken }
        }
    }

    /// The next whole message in `input` (after the handshake), or nil when more bytes are needed.
    private func parseMessage() throws(ZMTPError) -> [[UInt8]]? {
        while phase != .ready {
            guard try parseHandshake() else { return nil }
        }
        while let (flags, body) = try nextFrame() {
            if flags & Self.commandFlag != 0 {
                try handleCommand(body)
                continue
            }
            frames.append(Array(input[body]))
            if flags & Self.moreFlag == 0 {
                defer { frames = []; messageBytes = 0 }
                return frames
            }
        }
        return nil
    }

    /// Reads the peer's greeting or READY from `input`; false when more bytes are needed.
    private func parseHandshake() throws(ZMTPError) -> Bool {
        switch phase {
        case .greeting:
            let available = input.count - inputStart
            // Checked as the bytes come: a ZMTP 1.0/2.0 peer sends part of its greeting and waits.
            if available >= 1, input[inputStart] != 0xFF { throw fail(.notZMTP) }
            if available >= 10, input[inputStart + 9] & 1 != 1 { throw fail(.notZMTP) }
            if available >= 11, input[inputStart + 10] < 3 {
                throw fail(.version(major: input[inputStart + 10], minor: available >= 12 ? input[inputStart + 11] : 0))
            }
            guard available >= Self.greeting.count else { return false }
            let mechanism = input[(inputStart + 12)..<(inputStart + 32)].prefix { $0 != 0 }
            guard mechanism.elementsEqual("NULL".utf8) else {
                throw fail(.mechanism(String(decoding: mechanism.map { $0 >= 0x20 && $0 < 0x7F ? $0 : 0x3F }, as: UTF8.self)))
            }
            inputStart += Self.greeting.count
            phase = .handshake
            return true
        case .handshake:
            guard let (flags, body) = try nextFrame() else { return false }
            guard flags & Self.commandFlag != 0 else { throw fail(.malformed("a message before READY")) }
            let (name, data) = try command(body)
            switch name {
            case "READY":
                let type = try socketType(data)
                guard ["ROUTER", "DEALER", "REP"].contains(type.uppercased()) else { throw fail(.socketType(type)) }
                phase = .ready
            case "ERROR":
                throw fail(.refused(reason: try reason(data)))
            default:
                throw fail(.malformed("the command \(name) where READY belongs"))
            }
            return true
        case .ready:
            return true
        }
    }

    /// After READY: PING is answered, ERROR ends the connection, anything else is ignored.
    private func handleCommand(_ body: Range<Int>) throws(ZMTPError) {
        let (name, data) = try command(body)
        switch name {
        case "PING":
            // TTL (2 bytes), then a context of at most 16 bytes that PONG returns.
            guard data.count >= 2, data.count <= 18 else { throw fail(.malformed("a PING of \(data.count) bytes")) }
            var pong = [4] + Array("PONG".utf8)
            pong += input[(data.lowerBound + 2)..<data.upperBound]
            Self.appendFrame(pong, more: false, command: true, to: &output)
        case "ERROR":
            throw fail(.refused(reason: try reason(data)))
        default:
            break
        }
    }

    /// The next frame's flags and the range of its body in `input` (consumed), or nil when it has not
    /// all arrived. Sizes are checked against the limits as soon as the header is read.
    private func nextFrame() throws(ZMTPError) -> (flags: UInt8, body: Range<Int>)? {
        let available = input.count - inputStart
        guard available >= 1 else { return nil }
        let flags = input[inputStart]
        guard flags & ~(Self.moreFlag | Self.longFlag | Self.commandFlag) == 0 else {
            throw fail(.malformed("reserved flag bits set (flags 0x\(String(flags, radix: 16)))"))
        }
        let isCommand = flags & Self.commandFlag != 0
        if isCommand, flags & Self.moreFlag != 0 { throw fail(.malformed("a command frame with the MORE flag")) }
        let headerSize = flags & Self.longFlag != 0 ? 9 : 2
        guard available >= headerSize else { return nil }
        var size: UInt64 = 0
        for k in 1..<headerSize { size = size << 8 | UInt64(input[inputStart + k]) }
        if isCommand {
            guard size <= UInt64(Self.maxCommandBytes) else { throw fail(.frameTooLarge(bytes: size, limit: Self.maxCommandBytes)) }
        } else {
            guard size <= UInt64(maxFrameBytes) else { throw fail(.frameTooLarge(bytes: size, limit: maxFrameBytes)) }
            guard frames.count < maxFrames else { throw fail(.messageTooLarge(limit: maxFrames)) }
            guard messageBytes + Int(size) <= maxMessageBytes else { throw fail(.messageTooLarge(limit: maxMessageBytes)) }
        }
        guard UInt64(available - headerSize) >= size else { return nil }
        let body = (inputStart + headerSize)..<(inputStart + headerSize + Int(size))
        inputStart = body.upperBound
        if !isCommand { messageBytes += Int(size) }
        return (flags, body)
    }

    /// A command's name and the range of its data in `input`.
    private func command(_ body: Range<Int>) throws(ZMTPError) -> (name: String, data: Range<Int>) {
        guard let length = body.isEmpty ? nil : Int(input[body.lowerBound]), length >= 1, body.count >= 1 + length else {
            throw fail(.malformed("a command without a name"))
        }
        let name = String(decoding: input[(body.lowerBound + 1)..<(body.lowerBound + 1 + length)], as: UTF8.self)
        return (name, (body.lowerBound + 1 + length)..<body.upperBound)
    }

    /// The Socket-Type property of a READY command's metadata (`data`).
    private func socketType(_ data: Range<Int>) throws(ZMTPError) -> String {
        var at = data.lowerBound
        var type: String?
        while at < data.upperBound {
            let nameLength = Int(input[at])
            guard nameLength > 0, at + 1 + nameLength + 4 <= data.upperBound else { throw fail(.malformed("a READY property cut short")) }
            let name = String(decoding: input[(at + 1)..<(at + 1 + nameLength)], as: UTF8.self)
            at += 1 + nameLength
            var valueLength = 0
            for k in 0..<4 { valueLength = valueLength << 8 | Int(input[at + k]) }
            at += 4
            guard valueLength <= data.upperBound - at else { throw fail(.malformed("a READY property value cut short")) }
            if name.lowercased() == "socket-type" { type = String(decoding: input[at..<(at + valueLength)], as: UTF8.self) }
            at += valueLength
        }
        guard let type else { throw fail(.malformed("READY without a Socket-Type")) }
        return type
    }

    /// An ERROR command's reason.
    private func reason(_ data: Range<Int>) throws(ZMTPError) -> String {
        guard let length = data.isEmpty ? nil : Int(input[data.lowerBound]), data.count >= 1 + length else {
            throw fail(.malformed("an ERROR command cut short"))
        }
        let bytes = input[(data.lowerBound + 1)..<(data.lowerBound + 1 + length)]
        return String(decoding: bytes.map { $0 >= 0x20 && $0 < 0x7F ? $0 : 0x3F }, as: UTF8.self)
    }

    // MARK: Connecting

    /// Connects, trying again every ``retryMilliseconds`` while the peer is not there; false when the
    /// deadline passed first.
    private func connect(until deadline: ContinuousClock.Instant) throws(ZMTPError) -> Bool {
        while true {
            let socket = try openSocket()
            if try connect(socket, until: deadline) {
                fd = socket
                return true
            }
            _ = closeDescriptor(socket)
            let left = Poller.milliseconds(until: deadline)
            guard left > 0 else { return false }
            _ = poll(nil, 0, min(left, Int32(Self.retryMilliseconds)))
        }
    }

    /// A non-blocking stream socket for ``address``.
    private func openSocket() throws(ZMTPError) -> Int32 {
        let family = if case .unix = address { AF_UNIX } else { AF_INET }
        let socket = openStreamSocket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard socket >= 0 else { throw fail(.system(call: "socket", code: errno)) }
        if family == AF_INET {
            // As libzmq: a small request goes out at once.
            var on: Int32 = 1
            _ = setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        }
        return socket
    }

    /// Connects `socket`; false when the peer refused or is not there (try again), or the deadline passed.
    private func connect(_ socket: Int32, until deadline: ContinuousClock.Instant) throws(ZMTPError) -> Bool {
        var result: Int32
        switch address {
        case .unix(let path):
            var name = sockaddr_un()
            name.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &name.sun_path) { pathBytes in
                for (k, byte) in path.utf8.enumerated() { pathBytes[k] = byte }
            }
            result = withUnsafePointer(to: &name) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connectSocket(socket, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
        case let .ipv4(address, port):
            var name = sockaddr_in()
            name.sin_family = sa_family_t(AF_INET)
            name.sin_port = port.bigEndian
            name.sin_addr = address
            result = withUnsafePointer(to: &name) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connectSocket(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        if result == 0 { return true }
        guard errno == EINPROGRESS || errno == EINTR else { return false }
        let previous = fd
        fd = socket
        defer { fd = previous }
        guard try wait(for: Int16(POLLOUT), until: deadline) else { return false }
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(socket, SOL_SOCKET, SO_ERROR, &code, &length) == 0 else { return false }
        return code == 0
    }

    /// Waits until ``fd`` has `events` or `deadline` passes (false).
    private func wait(for events: Int16, until deadline: ContinuousClock.Instant) throws(ZMTPError) -> Bool {
        while true {
            var item = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&item, 1, Poller.milliseconds(until: deadline))
            if ready > 0 { return true }
            if ready == 0 { return false }
            if errno != EINTR { throw fail(.system(call: "poll", code: errno)) }
        }
    }


    /// Ends the connection with `problem`, which every later call throws.
    private func fail(_ problem: ZMTPError.Problem) -> ZMTPError {
        let error = ZMTPError(endpoint: endpoint, problem)
        failure = error
        if fd >= 0 { _ = closeDescriptor(fd) }
        fd = -1
        return error
    }

    // MARK: The bytes of ZMTP 3.1

    static let moreFlag: UInt8 = 0x01
    static let longFlag: UInt8 = 0x02
    static let commandFlag: UInt8 = 0x04

    /// Signature (0xFF, 8 bytes of padding, 0x7F), version 3.1, mechanism NULL, as-server 0, filler.
    static let greeting: [UInt8] = {
        var bytes = [UInt8](repeating: 0, count: 64)
        bytes[0] = 0xFF
        bytes[9] = 0x7F
        bytes[10] = 3
        bytes[11] = 1
        for (k, byte) in "NULL".utf8.enumerated() { bytes[12 + k] = byte }
        return bytes
    }()

    /// READY with the properties a libzmq DEALER sends: Socket-Type DEALER and an empty Identity (the
    /// coordinator's ROUTER then gives the connection a routing id of its own).
    static let ready: [UInt8] = {
        var body: [UInt8] = [5] + Array("READY".utf8)
        for (name, value) in [("Socket-Type", "DEALER"), ("Identity", "")] {
            body.append(UInt8(name.utf8.count))
            body += name.utf8
            let count = UInt32(value.utf8.count)
            body += [UInt8(count >> 24), UInt8(count >> 16 & 0xFF), UInt8(count >> 8 & 0xFF), UInt8(count & 0xFF)]
            body += value.utf8
        }
        var frame: [UInt8] = []
        appendFrame(body, more: false, command: true, to: &frame)
        return frame
    }()

    /// Appends one frame: flags (MORE, LONG, COMMAND), a 1- or 8-byte size, the body.
    static func appendFrame(_ body: [UInt8], more: Bool, command: Bool, to bytes: inout [UInt8]) {
        let isLong = body.count > 255
        bytes.append((more ? moreFlag : 0) | (isLong ? longFlag : 0) | (command ? commandFlag : 0))
        if isLong {
            let size = UInt64(body.count)
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(size >> UInt64(shift) & 0xFF)) }
        } else {
            bytes.append(UInt8(body.count))
        }
        bytes += body
    }
}

// The C library's calls the class's own methods of the same names hide.
private func closeDescriptor(_ fd: Int32) -> Int32 { close(fd) }
private func sendBytes(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int, _ flags: Int32) -> Int { send(fd, bytes, count, flags) }
private func connectSocket(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 { connect(fd, address, length) }
private func openStreamSocket(_ family: Int32, _ type: Int32, _ proto: Int32) -> Int32 { socket(family, type, proto) }
