// swift-tools-version:6.0
// opq: Apple's Operation/OperationQueue model across processes and machines, over ZeroMQ.
// Layers import one way, top to bottom (see ../shared/DESIGN.md):
//   CZeroMQ → ZeroMQ;  OPQCore (pure, no I/O);  OPQJournal (SQLite via GRDB, no sockets);  executables on top.
import PackageDescription

let package = Package(
    name: "opq",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "ZeroMQ", targets: ["ZeroMQ"]),
        .library(name: "OPQCore", targets: ["OPQCore"]),
        .library(name: "OPQWire", targets: ["OPQWire"]),
        .library(name: "OPQWorker", targets: ["OPQWorker"]),
        .library(name: "OPQCoordinator", targets: ["OPQCoordinator"]),
        .library(name: "OPQClient", targets: ["OPQClient"]),
        .library(name: "OPQDashboard", targets: ["OPQDashboard"]),
        .library(name: "OPQJobFile", targets: ["OPQJobFile"]),
        .executable(name: "opq-coordinator", targets: ["opq-coordinator"]),
        .executable(name: "opq-worker", targets: ["opq-worker"]),
        .executable(name: "opq-bench", targets: ["opq-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.28.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "5.0.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0"),
    ],
    targets: [
        // libzmq's API over zmq.h (apt libzmq3-dev to build), with libzmq.so.5 opened on the first zmq_* call
        // (dlopen) rather than linked: a command that never calls libzmq (`opq status` over ZMTP by hand,
        // `opq --version`) does not load it and its 14 libraries at start (issue 19).
        .target(name: "CZeroMQ"),
        .target(name: "ZeroMQ", dependencies: ["CZeroMQ"]),
        .target(
            name: "OPQCore",
            dependencies: [
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        .target(
            name: "OPQWire",
            dependencies: [
                "OPQCore",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            exclude: ["opq.proto"]
        ),
        .target(name: "OPQLogging", dependencies: [.product(name: "Logging", package: "swift-log")]),
        .target(name: "COPQSpawn"),
        // The version every executable prints (--version); the git revision comes in as a C macro from
        // scripts/install.sh, so a plain `swift build` needs no generated file.
        .target(name: "COPQBuildInfo"),
        .target(name: "OPQVersion", dependencies: ["COPQBuildInfo", "OPQWire"]),
        .target(name: "OPQSpawn", dependencies: ["COPQSpawn"]),
        // Child processes, local clusters, the built binaries, the clock and signals (one way each).
        .target(name: "OPQRuntime", dependencies: ["OPQSpawn"]),
        .target(
            name: "OPQWorker",
            dependencies: [
                "OPQCore", "OPQWire", "ZeroMQ", "OPQSpawn", "OPQRuntime",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "OPQJournal",
            dependencies: [
                "OPQCore", "OPQWire",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]
        ),
        .target(
            name: "OPQCoordinator",
            dependencies: [
                "OPQCore", "OPQWire", "ZeroMQ", "OPQJournal", "OPQRuntime", "OPQSpawn",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        .target(
            name: "OPQDashboard",
            dependencies: [
                "OPQCoordinator", "OPQCore",
                .product(name: "Hummingbird", package: "hummingbird"),
            ]
        ),
        .target(
            name: "OPQClient",
            dependencies: ["OPQCore", "OPQWire", "ZeroMQ"]
        ),
        .target(
            name: "OPQJobFile",
            dependencies: ["OPQCore", .product(name: "Yams", package: "Yams")]
        ),
        .executableTarget(
            name: "opq",
            dependencies: [
                "OPQJobFile", "OPQClient", "OPQCore", "OPQSpawn", "OPQVersion", "OPQRuntime",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            // Start time of a short command (issue 19, `opq-bench start`), the image staying position-
            // independent: linked by the toolchain's lld with its ~87,000 relative relocations packed
            // (RELR: 16 KB instead of 2 MB of table to read; glibc ≥ 2.36 runs it), and without exporting
            // every Swift symbol (the runtime's dladdr at start scans them all; a stripped opq's crash
            // backtrace then shows addresses only: install.sh --keep-symbols keeps the names).
            linkerSettings: [
                .unsafeFlags(["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs", "-Xlinker", "--no-export-dynamic"],
                             .when(platforms: [.linux], configuration: .release)),
            ]
        ),
        .executableTarget(
            name: "opq-coordinator",
            dependencies: [
                "OPQCoordinator", "OPQCore", "OPQDashboard", "OPQJournal", "OPQLogging", "OPQVersion", "OPQRuntime", "OPQWorker",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // Started by every `opq run` and `opq map --local`: linked as opq is (see there).
            linkerSettings: [
                .unsafeFlags(["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs", "-Xlinker", "--no-export-dynamic"],
                             .when(platforms: [.linux], configuration: .release)),
            ]
        ),
        .executableTarget(
            name: "opq-worker",
            dependencies: [
                "OPQWorker", "OPQCore", "OPQLogging", "OPQVersion", "ZeroMQ", "OPQRuntime",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "opq-bench",
            dependencies: [
                "OPQClient", "OPQWire", "OPQCore", "OPQSpawn", "OPQRuntime", "OPQJobFile", "ZeroMQ",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        .executableTarget(
            name: "opq-example-word-count",
            dependencies: [
                "OPQClient", "OPQCoordinator", "OPQCore", "OPQWorker",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "examples/word-count"
        ),
        .executableTarget(name: "opq-example-forward-dependency", dependencies: ["OPQClient"], path: "examples/forward-dependency"),
        .testTarget(name: "ZeroMQTests", dependencies: ["ZeroMQ", "OPQCore"]),
        .testTarget(name: "OPQCoreTests", dependencies: ["OPQCore"]),
        .testTarget(name: "OPQWireTests", dependencies: ["OPQWire"]),
        .testTarget(name: "OPQWorkerTests", dependencies: ["OPQWorker"]),
        .testTarget(name: "OPQJobFileTests", dependencies: ["OPQJobFile", "OPQCore", "OPQRuntime"]),
        .testTarget(name: "OPQCLITests", dependencies: ["OPQCore", "OPQSpawn", "OPQRuntime"]),
        .testTarget(name: "OPQRuntimeTests", dependencies: ["OPQRuntime"]),
        .testTarget(name: "OPQClientTests", dependencies: ["OPQClient"]),
        .testTarget(
            name: "OPQJournalTests",
            dependencies: ["OPQJournal", "OPQCore", "OPQWire", .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(name: "OPQCoordinatorTests", dependencies: ["OPQCoordinator", "OPQCore", "OPQWire", "ZeroMQ"]),
        .testTarget(
            name: "OPQCoordinatorStateTests",
            dependencies: ["OPQCoordinator", "OPQCore", "OPQJournal", "OPQWire", .product(name: "Logging", package: "swift-log")]),
        .testTarget(
            name: "OPQDashboardTests",
            dependencies: ["OPQDashboard", "OPQCoordinator", "OPQCore", "OPQLogging", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "OPQEndToEndTests",
            dependencies: ["OPQClient", "OPQCore", "OPQWire", "OPQWorker", "OPQSpawn", "OPQRuntime", "ZeroMQ"]
        ),
    ]
)
