/// A calendar day in UTC, as a query names it (`YYYY-MM-DD`), and the epoch seconds it spans.
struct UTCDay: Sendable, Equatable {
    /// Days since 1970-01-01.
    let daysSinceEpoch: Int64

    /// The day's first second.
    var start: Int64 { daysSinceEpoch * 86_400 }
    /// The next day's first second (the day is `start..<end`).
    var end: Int64 { start + 86_400 }

    /// The day that holds `epochSeconds`.
    init(containing epochSeconds: Int64) {
        daysSinceEpoch = epochSeconds >= 0 ? epochSeconds / 86_400 : (epochSeconds - 86_399) / 86_400
    }

    /// A day written exactly `YYYY-MM-DD` (years 1970 to 9999, a day that exists in its month), or nil.
    init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in bytes[range] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), year >= 1970,
            (1...12).contains(month)
        else { return nil }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let lengths = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard (1...lengths[month - 1]).contains(day) else { return nil }
        daysSinceEpoch = Self.days(year: year, month: month, day: day)
    }

    /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's `days_from_civil`).
    static func days(year: Int, month: Int, day: Int) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = y / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return Int64(era * 146_097 + dayOfEra - 719_468)
    }
}
