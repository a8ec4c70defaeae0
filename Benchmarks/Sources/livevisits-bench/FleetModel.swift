/// The busiest hour of a fleet as `fleet-day` plays it: what each technician, their customer's phone and the
/// dispatcher do, second by second of fleet time (real time; the benchmark compresses it by its speed-up).
///
/// Each technician works one visit an hour, a cycle of 3,600 s that starts at an offset of their own (spread
/// evenly over the hour, so the fleet is in a steady state at every moment):
///
/// | phase (s) | what happens | by |
/// |---|---|---|
/// | 0 | the visit is booked (`POST /v1/visits`, with the service location, 8.3 km away) | dispatcher |
/// | 5 / 30 | the customer's app registers the visit's Live Activity (started by push-to-start / opened by hand), then reports it `active` | customer |
/// | 60 | `enRoute` | technician |
/// | 70–2,160 | a location fix every 10 s while driving, straight towards the visit (8.3 → 0.3 km): the server appends a `progress` when the shown distance moves by 0.1 km, `nearby` within 1 km | technician |
/// | 2,170 | `onSite` (no more fixes: the technician stands still) | technician |
/// | 3,000 / 3,500 | `finishing`, `completed`; the app reports the activity `ended` 5 s later | technician, customer |
///
/// One visit in 25 (4 %) is cancelled by the dispatcher at 600 s instead (the app reports `ended`, the
/// technician stops driving towards it). Customers: half have a push-to-start token (their visit's `start`
/// goes to it at booking), three in ten start the activity in the app, two in ten have notification tokens
/// only and get the fallback alerts. Technicians move for 2,100 s of every 3,600: 58 % of the fleet sends a
/// fix every 10 s, 583 fixes/s for 10,000 technicians.
struct FleetModel: Sendable {
    static let hour = 3_600.0
    static let booking = 0.0
    static let pushToStartRegistration = 5.0
    static let appRegistration = 30.0
    static let enRoute = 60.0
    static let fixEvery = 10.0
    static let lastFix = 2_160.0
    static let onSite = 2_170.0
    static let cancellation = 600.0
    static let finishing = 3_000.0
    static let completed = 3_500.0
    static let stateReportDelay = 1.0
    static let endedReportDelay = 5.0
    static let startKilometres = 8.3
    static let endKilometres = 0.3

    /// How the customer of a technician's visits follows them.
    enum Follower: Sendable {
        /// A push-to-start token: the `start` at booking, then the activity registers from the app.
        case pushToStart
        /// No push-to-start token: the app starts the activity and registers it.
        case app
        /// No Live Activity: ordinary notification tokens, the fallback alerts.
        case notifications
    }

    enum Action: Equatable, Sendable {
        case book
        case registerActivity
        case reportState(String)
        /// A status event posted by the technician (`enRoute`, `onSite`, `finishing`, `completed`).
        case status(String)
        case fix(kilometres: Double)
        /// The dispatcher cancels the visit.
        case cancel
        /// Set-up only: what the fixes before the hour appended, as one event at the last fix's distance.
        case caughtUp(kilometres: Double)
    }

    struct Timed: Sendable {
        /// Fleet seconds from the start of the run.
        var time: Double
        var cycle: Int
        var action: Action
    }

    let technicians: Int

    func follower(_ t: Int) -> Follower {
        switch t % 10 {
        case 0..<5: .pushToStart
        case 5..<8: .app
        default: .notifications
        }
    }

    /// Where technician `t`'s cycle stood when the run began (seconds into it): spread evenly over the hour.
    func offset(_ t: Int) -> Double {
        (Double(t) * 0.618_033_988_749_895).truncatingRemainder(dividingBy: 1) * Self.hour
    }

    func isCancelled(_ t: Int, cycle k: Int) -> Bool { (t &* 31 &+ k &* 17) % 25 == 0 }

    /// The visit of technician `t`'s cycle `k`.
    static func visitId(_ t: Int, _ k: Int) -> String { "fd-\(t)-\(k)" }
    static func activityId(_ k: Int) -> String { "a-\(k)" }

    /// The straight-line distance to the visit at `phase` while driving.
    static func kilometres(atPhase phase: Double) -> Double {
        let driven = min(max((phase - enRoute) / (lastFix - enRoute), 0), 1)
        return startKilometres - (startKilometres - endKilometres) * driven
    }

    /// One cycle's script, in phase order.
    func script(_ t: Int, cycle k: Int) -> [(phase: Double, action: Action)] {
        var script: [(Double, Action)] = [(Self.booking, .book)]
        switch follower(t) {
        case .pushToStart: script.append((Self.pushToStartRegistration, .registerActivity))
        case .app: script.append((Self.appRegistration, .registerActivity))
        case .notifications: break
        }
        if let registered = script.last, registered.1 == .registerActivity {
            script.append((registered.0 + Self.stateReportDelay, .reportState("active")))
        }
        script.append((Self.enRoute, .status("enRoute")))
        let cancelled = isCancelled(t, cycle: k)
        let drivingUntil = cancelled ? Self.cancellation : Self.lastFix + 1
        var phase = Self.enRoute + Self.fixEvery
        while phase < drivingUntil {
            script.append((phase, .fix(kilometres: Self.kilometres(atPhase: phase))))
            phase += Self.fixEvery
        }
        let end: Double
        if cancelled {
            script.append((Self.cancellation, .cancel))
            end = Self.cancellation
        } else {
            script += [
                (Self.onSite, .status("onSite")), (Self.finishing, .status("finishing")),
                (Self.completed, .status("completed")),
            ]
            end = Self.completed
        }
        if follower(t) != .notifications { script.append((end + Self.endedReportDelay, .reportState("ended"))) }
        return script
    }

    /// Technician `t`'s actions in fleet time `[from, to)`, in order.
    func actions(_ t: Int, from: Double, to: Double) -> [Timed] {
        let offset = offset(t)
        var timed: [Timed] = []
        let first = Int(((from + offset) / Self.hour).rounded(.down))
        let last = Int(((to + offset) / Self.hour).rounded(.down))
        for k in max(first, 0)...max(last, 0) {
            for (phase, action) in script(t, cycle: k) {
                let time = Double(k) * Self.hour + phase - offset
                if time >= from && time < to { timed.append(Timed(time: time, cycle: k, action: action)) }
            }
        }
        return timed
    }

    /// What happened to technician `t`'s current visit before the run began (fleet time 0), as the set-up
    /// replays it: the cycle's actions before its offset, its fixes folded into one event at the last fix's
    /// distance (what the location rules would have appended last), placed where the last fix was.
    func history(_ t: Int) -> [Action] {
        let offset = offset(t)
        var history: [Action] = []
        var lastFix: Double?
        for (phase, action) in script(t, cycle: 0) where phase < offset {
            if case .fix(let kilometres) = action {
                lastFix = kilometres
                continue
            }
            if let km = lastFix {
                history.append(.caughtUp(kilometres: km))
                lastFix = nil
            }
            history.append(action)
        }
        if let km = lastFix { history.append(.caughtUp(kilometres: km)) }
        return history
    }
}
