import Foundation
import Testing

/// `opq-coordinator --http`: metrics scraped by a real Prometheus, the dashboard rendered by a real
/// headless Chromium, the JSON API, and the daemons' JSON logs.
@Suite(.serialized) struct DashboardTests {
    /// A coordinator with `--http 127.0.0.1:0` and one worker, over ipc:// in `scratch`.
    struct Cluster {
        let clients: String
        let coordinator: Run
        let worker: Run
        /// `http://127.0.0.1:PORT`, as the coordinator printed it.
        let http: String

        init(_ scratch: Scratch, slots: Int, httpOptions: [String] = []) throws {
            clients = "ipc://\(scratch.path("clients.sock"))"
            let workers = "ipc://\(scratch.path("workers.sock"))"
            coordinator = try Run("opq-coordinator", ["--workers-endpoint", workers, "--clients-endpoint", clients,
                                                      "--http", "127.0.0.1:0"] + httpOptions, in: scratch)
            worker = try Run("opq-worker", ["--coordinator", workers, "--name", "w1", "--slots", String(slots)], in: scratch)
            guard coordinator.waitForOutput("\n", within: 60),
                  let field = coordinator.stdout.split(separator: " ").first(where: { $0.hasPrefix("http=") }) else {
                coordinator.stop()
                worker.stop()
                throw DashboardTestError("the coordinator printed no http= field: \(coordinator.stdout)\(coordinator.stderr)")
            }
            http = String(field.dropFirst("http=".count)).trimmingCharacters(in: .whitespacesAndNewlines)
        }

        func stop() {
            worker.stop()
            coordinator.stop()
        }

        /// Submits the job file `file`; returns the job's number.
        func submit(_ file: String, in scratch: Scratch) throws -> Int {
            let submit = try Run("opq", ["submit", file, "--json"], in: scratch, environment: ["OPQ_COORDINATOR": clients])
            #expect(submit.finish(within: 60) == 0, "\(submit.stderr)")
            let object = try JSONSerialization.jsonObject(with: Data(submit.stdout.utf8)) as? [String: Any]
            return try #require(object?["job"] as? Int)
        }

        /// Waits for job `job` to finish.
        func wait(_ job: Int, in scratch: Scratch) throws {
            let wait = try Run("opq", ["--coordinator", clients, "wait", "job-\(job)", "--timeout", "60"], in: scratch)
            #expect(wait.finish(within: 90) != nil, "\(wait.stdout)\(wait.stderr)")
        }
    }

    @Test func aNonLoopbackHTTPAddressIsRefusedWithTheReason() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let coordinator = try Run("opq-coordinator", ["--http", "0.0.0.0:7132", "--clients-endpoint", "ipc://\(scratch.path("c"))",
                                                      "--workers-endpoint", "ipc://\(scratch.path("w"))"], in: scratch)
        #expect(coordinator.finish(within: 30) == 64)
        #expect(coordinator.stderr.contains("not a loopback address"), "\(coordinator.stderr)")
        // A token alone is not enough: CURVE must protect the endpoints too. The error names both flags.
        let token = try scratch.write("token", "a-token-of-thirty-two-characters\n")
        #expect(chmod(token, 0o600) == 0)
        let withToken = try Run("opq-coordinator", ["--http", "0.0.0.0:7132", "--http-token", token,
                                                    "--clients-endpoint", "ipc://\(scratch.path("c"))",
                                                    "--workers-endpoint", "ipc://\(scratch.path("w"))"], in: scratch)
        #expect(withToken.finish(within: 30) == 64)
        #expect(withToken.stderr.contains("--curve-key") && withToken.stderr.contains("--http-token"), "\(withToken.stderr)")
    }

    @Test func withATokenEveryHTTPRequestMustCarryIt() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let secret = "a-token-of-thirty-two-characters"
        let token = try scratch.write("token", secret + "\n")
        #expect(chmod(token, 0o600) == 0)
        let cluster = try Cluster(scratch, slots: 1, httpOptions: ["--http-token", token])
        defer { cluster.stop() }
        func status(_ path: String, _ extra: [String]) throws -> String {
            let get = try Run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}"] + extra + [cluster.http + path], in: scratch)
            return get.finish(within: 30) == 0 ? get.stdout : "curl failed: \(get.stderr)"
        }
        for path in ["/", "/metrics", "/api/jobs", "/api/events"] {
            #expect(try status(path, []) == "401", "\(path) without the token")
            #expect(try status(path, ["-H", "Authorization: Bearer not-the-token-but-as-long-as-it"]) == "401", "\(path) with a wrong token")
        }
        let refused = try Run("/usr/bin/curl", ["-s", cluster.http + "/metrics"], in: scratch)
        #expect(refused.finish(within: 30) == 0 && refused.stdout.contains("Authorization: Bearer TOKEN"), "\(refused.stdout)")
        #expect(try status("/metrics", ["-H", "Authorization: Bearer \(secret)"]) == "200")
        #expect(try status("/api/jobs", ["-u", "anyone:\(secret)"]) == "200")
    }

    /// With CURVE on the endpoints and a token, the dashboard may listen on every interface, and still
    /// answers only requests that carry the token.
    @Test func withCurveAndATokenTheDashboardListensOnEveryInterfaceButAnswersOnlyTheToken() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let keys = try Run("opq", ["keys", "generate", "--role", "coordinator", "--out", scratch.path("keys")], in: scratch)
        #expect(keys.finish(within: 30) == 0, "\(keys.stderr)")
        for directory in ["workers.d", "clients.d"] {
            try FileManager.default.createDirectory(atPath: scratch.path(directory), withIntermediateDirectories: true)
        }
        let secret = "a-token-of-thirty-two-characters"
        let token = try scratch.write("token", secret + "\n")
        #expect(chmod(token, 0o600) == 0)
        let coordinator = try Run("opq-coordinator", [
            "--curve-key", scratch.path("keys/coordinator.secret"),
            "--authorized-workers", scratch.path("workers.d"), "--authorized-clients", scratch.path("clients.d"),
            "--workers-endpoint", "ipc://\(scratch.path("w"))", "--clients-endpoint", "ipc://\(scratch.path("c"))",
            "--http", "0.0.0.0:0", "--http-token", token,
        ], in: scratch)
        defer { coordinator.stop() }
        #expect(coordinator.waitForOutput("\n", within: 60), "\(coordinator.stderr)")
        let field = try #require(coordinator.stdout.split(separator: " ").first { $0.hasPrefix("http=") }, "\(coordinator.stdout)")
        let port = try #require(field.split(separator: ":").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) })
        let url = "http://127.0.0.1:\(port)/metrics"
        func status(_ extra: [String]) throws -> String {
            let get = try Run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}"] + extra + [url], in: scratch)
            return get.finish(within: 30) == 0 ? get.stdout : "curl failed: \(get.stderr)"
        }
        #expect(try status([]) == "401")
        #expect(try status(["-H", "Authorization: Bearer wrong-token-0123456789"]) == "401")
        #expect(try status(["-H", "Authorization: Bearer \(secret)"]) == "200")
        #expect(try status(["-u", "me:\(secret)"]) == "200")
        let listening = try Run("/usr/bin/ss", ["-Hltn", "sport = :\(port)"], in: scratch)
        #expect(listening.finish(within: 30) == 0 && listening.stdout.contains("0.0.0.0:\(port)"), "\(listening.stdout)")
    }

    @Test func prometheusScrapesTheCoordinatorDuringAJobAndCountsItsOutcomes() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let cluster = try Cluster(scratch, slots: 2)
        defer { cluster.stop() }
        let target = try #require(cluster.http.split(separator: "/").last.map(String.init))
        let port = try freePort()
        let configuration = try scratch.write("prometheus.yml", """
            global:
              scrape_interval: 1s
              evaluation_interval: 1s
            scrape_configs:
              - job_name: opq
                scrape_interval: 1s
                static_configs:
                  - targets: ['\(target)']
            """)
        // Prometheus logs to stderr; `exec` keeps its pid and puts its log on the pipe the test reads.
        let prometheus = try Run("/bin/sh", ["-c", "exec prometheus \"$@\" 2>&1", "prometheus",
                                             "--config.file=\(configuration)", "--web.listen-address=127.0.0.1:\(port)",
                                             "--storage.tsdb.path=\(scratch.path("tsdb"))"], in: scratch)
        defer { prometheus.stop() }
        #expect(prometheus.waitForOutput("Server is ready to receive web requests", within: 90), "\(prometheus.stdout)")
        let api = "http://127.0.0.1:\(port)"
        #expect(try waitForQuery(api, "up{job=\"opq\"}", within: 60, in: scratch) { $0 == 1 } != nil, "Prometheus never scraped \(target)")

        // Six that succeed (long enough that scrapes see them running) and two that fail.
        let succeed = (1...6).map { "{\"name\": \"step-\($0)\", \"shell\": \"exec sleep 0.6\"}" }
        let fail = (1...2).map { "{\"name\": \"broken-\($0)\", \"shell\": \"echo boom >&2; exit 3\"}" }
        let file = try scratch.write("job.json", "{\"operations\": [\((succeed + fail).joined(separator: ", "))]}")
        let job = try cluster.submit(file, in: scratch)
        try cluster.wait(job, in: scratch)

        let succeeded = try waitForQuery(api, "sum(opq_operations_finished_total{outcome=\"succeeded\"})", within: 60, in: scratch) { $0 == 6 }
        let failed = try waitForQuery(api, "sum(opq_operations_finished_total{outcome=\"failed\"})", within: 60, in: scratch) { $0 == 2 }
        #expect(succeeded == 6 && failed == 2, "\(cluster.coordinator.stderr)")
        // Scraped while the job ran: some scrape saw a busy slot, and ready → executing latencies were recorded.
        #expect(try waitForQuery(api, "max_over_time(opq_slots{state=\"used\"}[5m])", within: 30, in: scratch) { $0 >= 1 } != nil)
        #expect(try waitForQuery(api, "opq_dispatch_latency_seconds_count", within: 30, in: scratch) { $0 == 8 } != nil)
        #expect(try waitForQuery(api, "opq_workers", within: 30, in: scratch) { $0 == 1 } != nil)
    }

    @Test func headlessChromiumRendersJobsWorkersAndFailuresWhileAJobRuns() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let cluster = try Cluster(scratch, slots: 2)
        defer { cluster.stop() }
        let release = scratch.path("release")
        #expect(mkfifo(release, 0o600) == 0)
        // "render-report" runs until the test releases it (at most 120 s), so the job is running when Chromium looks.
        let file = try scratch.write("job.json", """
            {"operations": [
              {"name": "render-report", "command": ["timeout", "120", "sh", "-c", "read line < \\"$0\\"", "\(release)"]},
              {"name": "explode", "shell": "echo kaboom-on-stderr >&2; exit 3"},
              {"name": "tidy-up", "shell": "true"},
              {"name": "archive", "shell": "true"}
            ]}
            """)
        let events = try Run("/usr/bin/curl", ["-sN", "\(cluster.http)/api/events"], in: scratch)
        defer { events.stop() }
        let job = try cluster.submit(file, in: scratch)
        // The live stream (the dashboard's own feed) shows the failure with its output, and the long step running.
        #expect(events.waitForOutput("kaboom-on-stderr", within: 60), "\(events.stdout.suffix(2_000))")
        #expect(events.waitForOutput("\"outcome\":\"running\"", within: 60))
        #expect(events.waitForOutput("\"succeeded\":2", within: 60))

        let profile = scratch.path("chromium-profile")
        let chromium = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
                        "--user-data-dir=\(profile)", "--window-size=1400,1000"]
        let dump = try Run("/usr/bin/chromium", chromium + ["--dump-dom", cluster.http + "/"], in: scratch, environment: ["HOME": scratch.path("")])
        defer { kill(-dump.pid, SIGKILL) }
        #expect(dump.finish(within: 120) == 0, "\(dump.stderr.suffix(2_000))")
        let dom = dump.stdout
        #expect(dom.contains("<td class=\"name\">render-report</td>"), "job name missing:\n\(dom.prefix(4_000))")
        #expect(dom.contains("data-job=\"\(job)\""))
        #expect(dom.contains("<span class=\"count\">3 / 4</span>"), "progress missing:\n\(dom.prefix(4_000))")
        #expect(dom.contains("<tr class=\"worker\" data-worker=\"w1\"><td>w1</td>"), "worker row missing")
        #expect(dom.contains("class=\"failure\"") && dom.contains("explode") && dom.contains("kaboom-on-stderr"), "failure missing")
        #expect(dom.contains("class=\"bar running\""), "the running task's bar is missing")

        let artifacts = Executables.repository.appendingPathComponent(".build/test-artifacts")
        try FileManager.default.createDirectory(at: artifacts, withIntermediateDirectories: true)
        let screenshot = artifacts.appendingPathComponent("dashboard.png").path
        try? FileManager.default.removeItem(atPath: screenshot)
        let shot = try Run("/usr/bin/chromium", chromium + ["--screenshot=\(screenshot)", cluster.http + "/"], in: scratch,
                           environment: ["HOME": scratch.path("")])
        defer { kill(-shot.pid, SIGKILL) }
        #expect(shot.finish(within: 120) == 0, "\(shot.stderr.suffix(2_000))")
        let png = FileManager.default.contents(atPath: screenshot) ?? Data()
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 10_000, "no screenshot at \(screenshot)")
        print("dashboard screenshot: \(screenshot)")

        let writer = open(release, O_WRONLY | O_NONBLOCK)
        if writer >= 0 {
            _ = write(writer, "go\n", 3)
            close(writer)
        }
        try cluster.wait(job, in: scratch)
    }

    @Test func theJSONAPIServesTheSameSnapshotAndOperationDetails() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let cluster = try Cluster(scratch, slots: 1)
        defer { cluster.stop() }
        let file = try scratch.write("job.json", """
            {"operations": [{"name": "only", "shell": "echo out; echo err >&2; exit 7"}]}
            """)
        let job = try cluster.submit(file, in: scratch)
        try cluster.wait(job, in: scratch)
        let events = try Run("/usr/bin/curl", ["-sN", "\(cluster.http)/api/events"], in: scratch)
        defer { events.stop() }
        #expect(events.waitForOutput("\"exitCode\":7", within: 60))

        let failures = try #require(try getJSON("\(cluster.http)/api/failures", in: scratch) as? [[String: Any]])
        let failure = try #require(failures.first)
        #expect(failure["name"] as? String == "only" && failure["exitCode"] as? Int == 7)
        #expect(failure["stdoutTail"] as? String == "out\n" && failure["stderrTail"] as? String == "err\n")
        let operation = try #require(failure["operation"] as? Int)
        let details = try #require(try getJSON("\(cluster.http)/api/operations/\(operation)", in: scratch) as? [String: Any])
        let attempts = try #require(details["attempts"] as? [[String: Any]])
        #expect(attempts.map { $0["outcome"] as? String } == ["failed"] && attempts.first?["worker"] as? String == "w1")
        let jobs = try #require(try getJSON("\(cluster.http)/api/jobs", in: scratch) as? [[String: Any]])
        #expect(jobs.contains { $0["id"] as? Int == job && $0["isFinished"] as? Bool == true })
        let workers = try #require(try getJSON("\(cluster.http)/api/workers", in: scratch) as? [[String: Any]])
        #expect(workers.map { $0["id"] as? String } == ["w1"] && workers.first?["slots"] as? Int == 1)
        let missing = try Run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "\(cluster.http)/api/operations/999999"], in: scratch)
        #expect(missing.finish(within: 30) == 0 && missing.stdout == "404")
    }

    @Test func theDaemonsWriteOneJSONObjectPerLogLine() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let clients = "ipc://\(scratch.path("clients.sock"))"
        let workers = "ipc://\(scratch.path("workers.sock"))"
        let coordinator = try Run("opq-coordinator", ["--workers-endpoint", workers, "--clients-endpoint", clients,
                                                      "--log-format", "json"], in: scratch)
        defer { coordinator.stop() }
        let worker = try Run("opq-worker", ["--coordinator", workers, "--name", "logger-w", "--slots", "1", "--log-format", "json"], in: scratch)
        defer { worker.stop() }
        // Once `opq workers` lists it, the coordinator has logged its join (before answering).
        let deadline = Date().addingTimeInterval(60)
        var listed = false
        while !listed && Date() < deadline {
            let list = try Run("opq", ["--coordinator", clients, "workers"], in: scratch)
            listed = list.finish(within: 30) == 0 && list.stdout.contains("logger-w")
        }
        #expect(listed)
        let joined = jsonLines(coordinator.stderr).first { $0["message"] as? String == "worker joined" }
        let line = try #require(joined, "no 'worker joined' line in:\n\(coordinator.stderr)")
        #expect(line["worker.id"] as? String == "logger-w" && line["level"] as? String == "info")
        #expect(line["label"] as? String == "opq.coordinator" && (line["time"] as? String)?.hasSuffix("Z") == true)
        let coordinatorLines = coordinator.stderr.split(separator: "\n")
        #expect(!coordinatorLines.isEmpty && coordinatorLines.count == jsonLines(coordinator.stderr).count, "a line is not JSON:\n\(coordinator.stderr)")
        worker.stop()
        let workerLines = worker.stderr.split(separator: "\n")
        #expect(workerLines.count == jsonLines(worker.stderr).count, "a worker line is not JSON:\n\(worker.stderr)")
    }
}

struct DashboardTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The lines of `text` that are JSON objects.
private func jsonLines(_ text: String) -> [[String: Any]] {
    text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
}

/// GET `url` with curl (a real HTTP client) and parse the body as JSON.
func getJSON(_ url: String, in scratch: Scratch) throws -> Any {
    let get = try Run("/usr/bin/curl", ["-sf", url], in: scratch)
    guard get.finish(within: 30) == 0 else { throw DashboardTestError("GET \(url) failed: \(get.stderr)") }
    return try JSONSerialization.jsonObject(with: Data(get.stdout.utf8))
}

/// Asks Prometheus's query API for `query` until its (single) value satisfies `accept`; returns it, or
/// nil at the deadline. Each try is one real HTTP request (curl); Prometheus answers from what it scraped.
private func waitForQuery(_ api: String, _ query: String, within seconds: Double, in scratch: Scratch,
                          accept: (Double) -> Bool) throws -> Double? {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        let get = try Run("/usr/bin/curl", ["-sf", "-G", "--data-urlencode", "query=\(query)", "\(api)/api/v1/query"], in: scratch)
        guard get.finish(within: 30) == 0 else { continue }
        if let body = try? JSONSerialization.jsonObject(with: Data(get.stdout.utf8)) as? [String: Any],
           let result = (body["data"] as? [String: Any])?["result"] as? [[String: Any]],
           let value = (result.first?["value"] as? [Any])?.last as? String, let number = Double(value), accept(number) {
            return number
        }
    }
    return nil
}

/// A TCP port on 127.0.0.1 that was free a moment ago (for a server that cannot report the one it bound).
private func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw DashboardTestError("socket() failed: errno \(errno)") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw DashboardTestError("bind() failed: errno \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}
