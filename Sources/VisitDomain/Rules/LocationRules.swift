/// What a technician's location does to their visits under way (the rules' `location` block): when a fix
/// is trusted, when a visit turns `nearby` by itself, and when a new distance is worth a `progress`.
public struct LocationRules: Sendable, Hashable {
    /// An `enRoute` visit whose shown distance is at most this many kilometres turns `nearby`.
    public var nearbyRadiusKm: Double
    /// A `progress` is appended only when the shown distance moved by at least this much from the visit's
    /// (compared in tenths of a kilometre, the precision distances are shown in).
    public var minChangeKm: Double
    /// A fix whose accuracy radius is larger than this (metres) changes nothing and is not accepted.
    public var maxAccuracyMetres: Double

    public init(nearbyRadiusKm: Double = 1.0, minChangeKm: Double = 0.1, maxAccuracyMetres: Double = 200) {
        self.nearbyRadiusKm = nearbyRadiusKm
        self.minChangeKm = minChangeKm
        self.maxAccuracyMetres = maxAccuracyMetres
    }

    /// A distance in kilometres as it is shown: rounded to one decimal, in tenths (`1.25` → 13).
    public static func tenths(_ kilometres: Double) -> Int {
        Int((kilometres * 10).rounded(.toNearestOrAwayFromZero))
    }

    /// `tenths` back in kilometres (13 → 1.3).
    public static func kilometres(tenths: Int) -> Double { Double(tenths) / 10 }

    /// The rules' thresholds in tenths, as compared (a threshold between two tenths counts as the next one up:
    /// `minChangeKm` 0.15 needs a change of two tenths).
    var nearbyTenths: Int { Int((nearbyRadiusKm * 10 + 1e-9).rounded(.down)) }
    var minChangeTenths: Int { max(1, Int((minChangeKm * 10 - 1e-9).rounded(.up))) }
}
