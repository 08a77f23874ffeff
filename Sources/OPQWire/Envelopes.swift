import OPQCore

// Shorthands for building the common envelopes, so senders need not spell out the nesting.

extension Opq_V1_WorkerMessage {
    /// A batch of reports, in the order they happened.
    public static func reports(_ items: [Opq_V1_Report]) -> Self { .with { $0.reports.items = items } }

    /// A heartbeat.
    public static var heartbeat: Self { .with { $0.heartbeat = Opq_V1_Heartbeat() } }
}

extension Opq_V1_Report {
    /// The attempt began executing.
    public static func started(_ operation: OperationID, attempt: Int) -> Self {
        .with { $0.started = Opq_V1_AttemptRef(operation, attempt: attempt) }
    }

    /// The attempt ended.
    public static func finished(_ finished: Opq_V1_Finished) -> Self { .with { $0.finished = finished } }

    /// A handler reported progress.
    public static func progress(_ progress: Opq_V1_Progress) -> Self { .with { $0.progress = progress } }
}

extension Opq_V1_CoordinatorToWorker {
    /// A batch of orders, in the order the coordinator decided them.
    public static func orders(_ items: [Opq_V1_Order]) -> Self { .with { $0.orders.items = items } }

    /// A heartbeat.
    public static var heartbeat: Self { .with { $0.heartbeat = Opq_V1_Heartbeat() } }

    /// A disconnect naming what was wrong with the worker's message.
    public static func disconnect(_ error: WireError) -> Self { .with { $0.disconnect = Opq_V1_Disconnect(error) } }
}

extension Opq_V1_Order {
    /// Run an attempt.
    public static func dispatch(_ dispatch: Opq_V1_Dispatch) -> Self { .with { $0.dispatch = dispatch } }

    /// Stop an attempt.
    public static func kill(_ kill: Opq_V1_Kill) -> Self { .with { $0.kill = kill } }
}

extension Opq_V1_CoordinatorToClient {
    /// The reply to request `requestID`; `fill` sets its result.
    public static func reply(_ requestID: UInt64, _ fill: (inout Opq_V1_Reply) -> Void) -> Self {
        .with {
            $0.reply.requestID = requestID
            fill(&$0.reply)
        }
    }

    /// A refusal of request `requestID`.
    public static func reply(_ requestID: UInt64, error: Opq_V1_Error) -> Self {
        reply(requestID) { $0.error = error }
    }
}

extension Opq_V1_ClientRequest {
    /// Request `requestID`; `fill` sets its body.
    public static func request(_ requestID: UInt64, _ fill: (inout Opq_V1_ClientRequest) -> Void) -> Self {
        .with {
            $0.requestID = requestID
            fill(&$0)
        }
    }
}
