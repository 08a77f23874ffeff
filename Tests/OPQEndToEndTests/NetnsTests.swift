import Foundation
import OPQClient
import OPQCore
import OPQWire
import Testing
import ZeroMQ

/// Four "hosts" as network namespaces joined by veth pairs to a bridge inside the coordinator's
/// namespace (10.x addresses exist only inside them); every namespace, link and process is removed
/// by ``stop()``, also when the test fails. Needs root and iproute2 (CI runs as root).
final class NetnsLab {
    static let ip = "/usr/sbin/ip"
    static var isAvailable: Bool { geteuid() == 0 && FileManager.default.isExecutableFile(atPath: ip) }

    let tag = String(UInt32.random(in: 0...UInt32.max), radix: 16)
    let subnet = "10.\(Int.random(in: 100...250)).\(Int.random(in: 0...250))"
    let directory: URL
    /// Namespace names by role: coordinator, w1, w2, client.
    private(set) var namespaces: [String: String] = [:]
    private(set) var processes: [ChildProcess] = []

    init(hosts: [String]) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("opq-netns-\(tag)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        do {
            try build(hosts)
        } catch {
            stop()
            throw error
        }
    }

    /// The namespace of `host`.
    func namespace(_ host: String) -> String { namespaces[host]! }

    /// The address of `host` (`coordinator` is .1, the others in order from .2).
    private(set) var addresses: [String: String] = [:]

    private func build(_ hosts: [String]) throws {
        let center = "opq-\(tag)-coordinator"
        try run(["netns", "add", center])
        namespaces["coordinator"] = center
        addresses["coordinator"] = "\(subnet).1"
        try run(["-n", center, "link", "set", "lo", "up"])
        try run(["-n", center, "link", "add", "br0", "type", "bridge"])
        try run(["-n", center, "addr", "add", "\(subnet).1/24", "dev", "br0"])
        try run(["-n", center, "link", "set", "br0", "up"])
        for (index, host) in hosts.enumerated() {
            let name = "opq-\(tag)-\(host)"
            try run(["netns", "add", name])
            namespaces[host] = name
            addresses[host] = "\(subnet).\(index + 2)"
            try run(["-n", name, "link", "set", "lo", "up"])
            try run(["-n", name, "link", "add", "eth0", "type", "veth", "peer", "name", link(host), "netns", center])
            try run(["-n", name, "addr", "add", "\(subnet).\(index + 2)/24", "dev", "eth0"])
            try run(["-n", name, "link", "set", "eth0", "up"])
            try run(["-n", center, "link", "set", link(host), "master", "br0"])
            try run(["-n", center, "link", "set", link(host), "up"])
        }
    }

    /// The coordinator-side end of `host`'s veth pair.
    func link(_ host: String) -> String { "v-\(host)" }

    /// Runs `ip ARGUMENTS` to completion; throws with its output if it fails.
    func run(_ arguments: [String]) throws {
        let process = try ChildProcess(Self.ip, arguments, name: "ip-\(UUID().uuidString.prefix(6))", logDirectory: directory)
        let status = process.waitForExit(within: 30)
        guard status == 0 else {
            throw NetnsError(description: "ip \(arguments.joined(separator: " ")) failed (\(status.map(String.init) ?? "timeout")): \(process.output)")
        }
    }

    /// Starts `program` (a built product, or an absolute path) inside `host`'s namespace; killed by ``stop()``
    /// (its whole process group: `ip netns exec` execs the program in place).
    @discardableResult
    func start(_ program: String, _ arguments: [String], in host: String, name: String) throws -> ChildProcess {
        let path = program.hasPrefix("/") ? program : BuiltProducts.path(program)
        let process = try ChildProcess(Self.ip, ["netns", "exec", namespace(host), path] + arguments, name: name, logDirectory: directory)
        processes.append(process)
        return process
    }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    var logs: String { processes.map { "── \($0.name)\n\($0.output)" }.joined(separator: "\n") }

    /// Kills every process, then deletes every namespace (their links go with them) and the directory.
    func stop() {
        for process in processes { process.stop() }
        processes = []
        for name in namespaces.values { try? run(["netns", "del", name]) }
        namespaces = [:]
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}

struct NetnsError: Error, CustomStringConvertible { let description: String }

/// opq across "machines": a coordinator, two workers and a client in four network namespaces, all
/// traffic over CURVE on 10.x addresses.
@Suite(.serialized, .enabled(if: NetnsLab.isAvailable && CurveKeyPair.isSupported, "needs root, iproute2 and CURVE"))
struct NetnsTests {
    @Test func aJobRunsAcrossNamespacesOverCurveAndNoCommandTextIsOnTheWire() throws {
        let lab = try NetnsLab(hosts: ["w1", "w2", "client"])
        defer { lab.stop() }
        let keyring = try CurveKeyring(in: lab.path("keys"))
        let w1Key = try keyring.make("w1", authorizedAs: .worker)
        let w2Key = try keyring.make("w2", authorizedAs: .worker)
        let clientKey = try keyring.make("client", authorizedAs: .client)
        let head = lab.addresses["coordinator"]!
        let capture = lab.path("capture.pcap")
        let tcpdump = try lab.start("/usr/bin/tcpdump", ["-i", "br0", "-U", "-n", "-w", capture, "tcp"], in: "coordinator", name: "tcpdump")
        #expect(tcpdump.waitForOutput("listening on", within: 20), "\(tcpdump.output)")

        let coordinator = try lab.start("opq-coordinator", [
            "--workers-endpoint", "tcp://0.0.0.0:7130", "--clients-endpoint", "tcp://\(head):7131",
            "--state", lab.path("state"), "--heartbeat", "0.5",
        ] + keyring.coordinatorArguments, in: "coordinator", name: "coordinator")
        try #require(coordinator.waitForOutput("opq-coordinator workers=", within: 30), "\(lab.logs)")
        for (name, key) in [("w1", w1Key), ("w2", w2Key)] {
            try lab.start("opq-worker", ["--coordinator", "tcp://\(head):7130", "--name", name, "--slots", "1", "--heartbeat", "0.5"]
                          + keyring.workerArguments(key.secretFile), in: name, name: name)
        }

        // A diamond whose command text carries a marker that must never be seen in clear on the wire.
        let marker = "opq-secret-\(lab.tag)"
        let out = lab.path("out")
        let job = lab.path("job.yaml")
        try """
            operations:
              - name: first
                shell: echo "\(marker) first $(cat /proc/sys/kernel/hostname) $(ip -o -4 addr show eth0 | awk '{print $4}')" >> \(out)
              - name: left
                after: [first]
                shell: sleep 0.5; echo "\(marker) left $(ip -o -4 addr show eth0 | awk '{print $4}')" >> \(out)
              - name: right
                after: [first]
                shell: sleep 0.5; echo "\(marker) right $(ip -o -4 addr show eth0 | awk '{print $4}')" >> \(out)
              - name: last
                after: [left, right]
                shell: echo "\(marker) last" >> \(out)
            """.write(toFile: job, atomically: true, encoding: .utf8)
        let submit = try lab.start("opq", ["--coordinator", "tcp://\(head):7131", "--server-key", keyring.coordinatorPublic,
                                           "--curve-key", clientKey.secretFile, "submit", job, "--wait"], in: "client", name: "client")
        let status = try #require(submit.waitForExit(within: 120), "the job did not finish\n\(lab.logs)")
        #expect(status == 0, "opq submit --wait: \(status)\n\(lab.logs)")
        let lines = Evidence.lines(out)
        #expect(lines.count == 4 && lines.last == "\(marker) last", "\(lines)")
        #expect(lines.filter { $0.contains(lab.subnet) }.count == 3, "commands ran inside the workers' namespaces: \(lines)")

        // An unknown client key from the client's namespace is refused with the message.
        let strangerDirectory = lab.path("stranger")
        try FileManager.default.createDirectory(atPath: strangerDirectory, withIntermediateDirectories: true)
        let stranger = try CurveKeys.write(CurveKeyPair.generate(), to: strangerDirectory, name: "stranger")
        let refused = try lab.start("opq", ["--coordinator", "tcp://\(head):7131", "--server-key", keyring.coordinatorPublic,
                                            "--curve-key", stranger.secretFile, "submit", job], in: "client", name: "stranger")
        let refusedStatus = try #require(refused.waitForExit(within: 60))
        #expect((refusedStatus >> 8) & 0xff == 3 && refused.output.contains("the coordinator did not accept this key"), "\(refused.output)")
        #expect(Evidence.lines(out).count == 4, "nothing of the stranger ran")

        tcpdump.stop()
        let bytes = try Data(contentsOf: URL(fileURLWithPath: capture))
        #expect(bytes.count > 4_096, "the capture saw the cluster's traffic (\(bytes.count) bytes)")
        #expect(bytes.range(of: Data(marker.utf8)) == nil, "the command text went over the wire in clear")
        #expect(bytes.range(of: Data("echo".utf8)) == nil)
    }

    @Test func aPartitionedWorkersOperationsRunAgainOnTheOtherWorkerAndNeverTwiceAtOnce() throws {
        let lab = try NetnsLab(hosts: ["w1", "w2", "client"])
        defer { lab.stop() }
        let keyring = try CurveKeyring(in: lab.path("keys"))
        let head = lab.addresses["coordinator"]!
        let keys = try ["w1", "w2"].map { try keyring.make($0, authorizedAs: .worker) }
        let clientKey = try keyring.make("client", authorizedAs: .client)
        let coordinator = try lab.start("opq-coordinator", [
            "--workers-endpoint", "tcp://\(head):7130", "--clients-endpoint", "tcp://\(head):7131", "--state", lab.path("state"),
            "--heartbeat", "0.5", "--liveness", "3", "--log-level", "debug",
        ] + keyring.coordinatorArguments, in: "coordinator", name: "coordinator")
        try #require(coordinator.waitForOutput("opq-coordinator workers=", within: 30), "\(lab.logs)")
        func startWorker(_ index: Int) throws -> ChildProcess {
            let name = "w\(index + 1)"
            return try lab.start("opq-worker", ["--coordinator", "tcp://\(head):7130", "--name", name, "--slots", "3", "--heartbeat", "0.5"]
                                 + keyring.workerArguments(keys[index].secretFile), in: name, name: name)
        }
        let w1 = try startWorker(0)

        // Each run of op1/op2 holds an exclusive flock on its operation's lock file while it lives (a
        // second copy that finds it held records "twice") for 8 s, and says on the fifo when it starts
        // and ends. op3 ends as soon as the partition begins (the `cut` file): w1 finishes it while cut
        // off and can only report it once the link is back, long after it was run again on w2.
        let fifo = try WorkerTrustTests.HeldFifo(lab.path("started"))
        let runs = lab.path("runs")
        let cutFile = lab.path("cut")
        let job = lab.path("job.yaml")
        let script = { (name: String) in
            "exec 9>\(lab.path(name)).lock; if flock -n 9; then echo \"start \(name) $PPID\" >> \(runs); echo \"\(name) $PPID\" > \(fifo.path); "
                + "sleep 8; echo \"end \(name) $PPID\" >> \(runs); echo \"end \(name) $PPID\" > \(fifo.path); "
                + "else echo \"twice \(name) $PPID\" >> \(runs); exit 3; fi"
        }
        try """
            operations:
              - name: op1
                shell: '\(script("op1"))'
              - name: op2
                shell: '\(script("op2"))'
              - name: op3
                shell: 'echo "op3 $PPID" > \(fifo.path); while [ ! -e \(cutFile) ]; do sleep 0.05; done; echo "done op3 $PPID" >> \(runs)'
              - name: after
                after: [op1, op2, op3]
                shell: 'echo "after $PPID" >> \(runs)'
            """.write(toFile: job, atomically: true, encoding: .utf8)
        let client = ["--coordinator", "tcp://\(head):7131", "--server-key", keyring.coordinatorPublic, "--curve-key", clientKey.secretFile]
        let submit = try lab.start("opq", client + ["submit", job], in: "client", name: "submit")
        try #require(submit.waitForExit(within: 60) == 0, "\(lab.logs)")
        let first = fifo.lines(3, within: 30)
        try #require(first.count == 3 && first.allSatisfy { $0.hasSuffix(" \(w1.pid)") }, "\(first)\n\(lab.logs)")

        // w2 joins; w1's link goes down with all three commands running (op3 then ends on w1), and stays
        // down until op1 and op2 have run again on w2 to their end: more than 10 s.
        let w2 = try startWorker(1)
        let cut = Date()
        try lab.run(["-n", lab.namespace("coordinator"), "link", "set", lab.link("w1"), "down"])
        FileManager.default.createFile(atPath: cutFile, contents: nil)
        let reruns = fifo.lines(3, within: 30)
        let requeuedAfter = Date().timeIntervalSince(cut)
        #expect(reruns.count == 3 && reruns.allSatisfy { $0.hasSuffix(" \(w2.pid)") }, "\(reruns)\n\(lab.logs)")
        // Liveness bound: lost after 3 × 0.5 s of silence, requeued a 1 s lease margin later (plus a
        // loaded machine's slack and w2's registration).
        #expect(requeuedAfter < 10, "requeued \(requeuedAfter) s after the partition")
        #expect(coordinator.output.contains("worker lost"), "\(coordinator.output)")
        let ends = fifo.lines(2, within: 30)
        let downFor = Date().timeIntervalSince(cut)
        #expect(ends.count == 2 && ends.allSatisfy { $0.hasSuffix(" \(w2.pid)") }, "\(ends)\n\(lab.logs)")
        #expect(downFor >= 10, "the link was down \(downFor) s")
        try lab.run(["-n", lab.namespace("coordinator"), "link", "set", lab.link("w1"), "up"])

        // Back on the network, w1 reconnects and reports op3's first attempt, which ended while it was cut
        // off: that attempt was requeued long ago, so the report is ignored (the run on w2 counts).
        #expect(coordinator.waitForOutput("stale report ignored", within: 60), "\(lab.logs)")
        #expect(coordinator.output.split(separator: "\n").contains { $0.contains("stale report ignored") && $0.contains("worker.id=w1") },
                "\(coordinator.output)")

        let jobID = try #require(submit.output.split(whereSeparator: \.isWhitespace).first { $0.hasPrefix("job-") }, "\(submit.output)")
        let wait = try lab.start("opq", client + ["wait", String(jobID)], in: "client", name: "wait")
        #expect(wait.waitForExit(within: 60) == 0, "\(lab.logs)")
        let lines = Evidence.lines(runs)
        #expect(lines.filter { $0.hasPrefix("twice") }.isEmpty, "a command overlapped its rerun:\n\(lines)")
        for name in ["op1", "op2"] {
            #expect(lines.filter { $0.hasPrefix("end \(name) ") } == ["end \(name) \(w2.pid)"], "\(name) ended once, on w2:\n\(lines)")
        }
        #expect(lines.filter { $0.hasPrefix("done op3 ") } == ["done op3 \(w1.pid)", "done op3 \(w2.pid)"], "\(lines)")
        #expect(lines.filter { $0.hasPrefix("after ") }.count == 1, "\(lines)")
    }
}
