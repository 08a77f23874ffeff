/// Checking a submission without accepting it (job files, before anything is sent).
extension Scheduler {
    /// Runs every check ``submit(_:at:)`` runs — fields, duplicate names, unknown dependencies, cycles,
    /// queue settings — and changes nothing: on an empty scheduler, a submission that passes is one a
    /// coordinator accepts for its contents.
    ///
    /// Unlike a submit on a throwaway scheduler it builds no operation records, so a job file of
    /// 200,000 operations is checked in a fraction of the memory (issue 19).
    /// - Complexity: O(n + e), like the validation of ``submit(_:at:)``.
    public func check(_ submission: Submission) throws(SubmissionError) {
        _ = try validate(submission)
    }
}
