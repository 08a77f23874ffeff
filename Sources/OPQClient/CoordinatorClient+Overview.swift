import OPQWire

extension CoordinatorClient {
    /// Every job (as ``jobs()``) and every queue (as ``queues()``) in one round trip: both requests are
    /// sent before either reply is awaited, and a coordinator answers a connection's reads in the order
    /// they came, in one turn. (`opq status`: one round trip instead of three, issue 19.) More than a
    /// page of jobs is read on, a page at a time, after the queues.
    ///
    /// - Parameters:
    ///   - firstReplyTimeout: seconds the jobs' reply is awaited at most — a short one makes this call the
    ///     probe ``ping(timeout:)`` would be, so an absent coordinator is reported at once.
    ///   - timeout: seconds (from the call) the queues' reply, and each later page, is awaited at most.
    /// - Throws: ``ClientError/timeout(endpoint:seconds:)`` (or ``ClientError/keyNotAccepted(endpoint:seconds:reason:)``)
    ///   naming the timeout that passed; a refusal as ``ClientError/refused(_:)``.
    public func jobsAndQueues(firstReplyTimeout: Double = 10, timeout: Double = 10) throws(ClientError) -> (jobs: [JobStatus], queues: [QueueStatus]) {
        let now = ContinuousClock.now
        let firstDeadline = now + .milliseconds(Int(firstReplyTimeout * 1000))
        let deadline = now + .milliseconds(Int(timeout * 1000))
        let jobsID = try connection.send(until: firstDeadline, { $0.listJobs = Opq_V1_ListJobs() }, timeout: firstReplyTimeout)
        let queuesID = try connection.send(until: deadline, { $0.listQueues = Opq_V1_ListQueues() }, timeout: timeout)
        guard case .reply(let jobsReply, _) = try connection.awaitReply(jobsID, until: firstDeadline, wake: nil) else {
            throw connection.noAnswer(firstReplyTimeout)
        }
        guard case .reply(let queuesReply, _) = try connection.awaitReply(queuesID, until: deadline, wake: nil) else {
            throw connection.noAnswer(timeout)
        }
        var jobs = jobsReply.jobs.jobs.map(JobStatus.init)
        var page = jobsReply.jobs
        while page.more, let last = page.jobs.last {
            page = try connection.request(timeout: timeout) { $0.listJobs.after = last.id }.reply.jobs
            jobs += page.jobs.map(JobStatus.init)
        }
        return (jobs, queuesReply.queues.queues.map(QueueStatus.init))
    }
}
