/// How many priority-10 pushes one target may get in an hour before the rest go at 5 (contract §8;
/// seed `000_…`: priority 10 "counts against the budget", and the app reports `frequentPushesEnabled`).
public struct PushBudget: Sendable, Hashable {
    /// The allowance of a token whose device did not report `frequentPushesEnabled: true` (and of a channel).
    public var priority10PerHour: Int
    /// The allowance of a token whose device reported `frequentPushesEnabled: true`.
    public var priority10PerHourFrequent: Int

    /// A budget.
    public init(priority10PerHour: Int = 12, priority10PerHourFrequent: Int = 48) {
        self.priority10PerHour = priority10PerHour
        self.priority10PerHourFrequent = priority10PerHourFrequent
    }
}
