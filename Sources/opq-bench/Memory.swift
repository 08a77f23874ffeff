#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How many bytes the process holds, for the bytes-per-pending-operation figures.
///
/// Preferred source: glibc's `mallinfo2()`, heap bytes in use = `uordblks` (arena chunks in use) +
/// `hblkhd` (chunks glibc served by `mmap`, which large arrays are). Swift's `Glibc` module does not
/// import `<malloc.h>`, so the function is looked up with `dlsym`; on x86-64 (System V ABI) a function
/// returning a struct larger than 16 bytes takes a hidden result pointer as its first argument, which
/// is how it is called here. A self-check at first use (allocate 1 MiB, see it counted) guards this; when
/// it fails, or off glibc/x86-64, the fallback is the resident set size from `/proc/self/statm`.
enum Memory {
    /// Which source ``bytesInUse()`` reads.
    enum Source: String, Codable {
        case mallinfo2 = "mallinfo2 (uordblks + hblkhd)"
        case residentSetSize = "RSS (/proc/self/statm)"
        case unavailable = "unavailable"
    }

    /// The source in force, decided once.
    static let source: Source = {
        if mallinfoHeapBytes() != nil { return .mallinfo2 }
        return residentBytes() != nil ? .residentSetSize : .unavailable
    }()

    /// Bytes in use by the process according to ``source``, or nil when nothing can be measured.
    static func bytesInUse() -> Int? {
        switch source {
        case .mallinfo2: mallinfoHeapBytes()
        case .residentSetSize: residentBytes()
        case .unavailable: nil
        }
    }

    // MARK: - mallinfo2

    #if canImport(Glibc) && arch(x86_64)
    private typealias MallinfoWithResultPointer = @convention(c) (UnsafeMutableRawPointer) -> UnsafeMutableRawPointer?

    /// `mallinfo2` called through its hidden result pointer; nil when absent or failing the self-check.
    private static let mallinfo2: MallinfoWithResultPointer? = {
        guard let symbol = dlsym(nil, "mallinfo2") else { return nil }
        let function = unsafeBitCast(symbol, to: MallinfoWithResultPointer.self)
        let before = heapBytes(function)
        // Allocated through the Swift runtime: LLVM may delete a malloc/free pair it can see through.
        let block = UnsafeMutableRawPointer.allocate(byteCount: 1 << 20, alignment: 16)
        block.initializeMemory(as: UInt8.self, repeating: 1, count: 1 << 20)
        let during = heapBytes(function)
        block.deallocate()
        return (during - before >= 1 << 20) && (during - before < 2 << 20) ? function : nil
    }()

    /// `uordblks + hblkhd` from `struct mallinfo2` (ten `size_t` fields: arena, ordblks, smblks, hblks,
    /// hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost).
    private static func heapBytes(_ function: MallinfoWithResultPointer) -> Int {
        withUnsafeTemporaryAllocation(of: Int.self, capacity: 10) { fields in
            fields.initialize(repeating: 0)
            _ = function(UnsafeMutableRawPointer(fields.baseAddress!))
            return fields[7] + fields[4]
        }
    }

    private static func mallinfoHeapBytes() -> Int? {
        mallinfo2.map(heapBytes)
    }
    #else
    private static func mallinfoHeapBytes() -> Int? { nil }
    #endif

    // MARK: - RSS

    /// Resident set size from `/proc/self/statm` (second field, in pages), or nil where there is no procfs.
    static func residentBytes() -> Int? {
        #if canImport(Glibc)
        guard let file = fopen("/proc/self/statm", "r") else { return nil }
        defer { fclose(file) }
        var size = 0, resident = 0
        guard withUnsafeMutablePointer(to: &size, { sizePointer in
            withUnsafeMutablePointer(to: &resident) { residentPointer in
                withVaList([sizePointer, residentPointer]) { vfscanf(file, "%ld %ld", $0) }
            }
        }) == 2 else { return nil }
        return resident * Int(sysconf(Int32(_SC_PAGESIZE)))
        #else
        return nil
        #endif
    }
}
