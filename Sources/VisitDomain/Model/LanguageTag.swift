/// A visit's language: a BCP 47 language tag (`zh-Hans`, `es`, `en-GB`), well-formed per RFC 5646's grammar.
///
/// Kept as the booking gave it (case included); comparisons ignore case, as BCP 47 does. It is not
/// personal data: it chooses the texts the customer's pushes and tracking page carry, and is shown with
/// the visit.
public struct LanguageTag: Sendable, Hashable, CustomStringConvertible {
    /// The tag as booked.
    public let text: String

    /// The longest tag accepted, bytes (RFC 5646 sets no limit; real tags, extensions included, are far
    /// shorter).
    public static let maximumBytes = 64

    /// What a well-formed tag looks like, for refusals.
    public static let requirement =
        "expected a BCP 47 language tag (RFC 5646), such as \"zh-Hans\", \"es\" or \"en-GB\""

    /// A tag, or nil when `text` is not well-formed per RFC 5646.
    public init?(_ text: String) {
        guard text.utf8.count <= Self.maximumBytes, Self.isWellFormed(text) else { return nil }
        self.text = text
    }

    public var description: String { text }

    /// The key texts are looked up by: the tag in lower case.
    public var key: String { text.lowercased() }

    /// The tags whose texts this one uses, most specific first: the tag, then each with its last subtag
    /// dropped (`zh-Hant-TW`, `zh-Hant`, `zh`); a single-character subtag left last (an extension's or
    /// private use's singleton) is dropped with it. Lower case.
    public var fallbackKeys: [String] {
        var subtags = key.split(separator: "-", omittingEmptySubsequences: false).map(String.init)
        var keys: [String] = []
        while !subtags.isEmpty {
            keys.append(subtags.joined(separator: "-"))
            subtags.removeLast()
            while let last = subtags.last, last.count == 1 { subtags.removeLast() }
        }
        return keys
    }

    /// Whether the language is written right to left: its script subtag says so (`Arab`, `Hebr`, …), or,
    /// without one, its language usually is (Arabic, Hebrew, Persian, Urdu, …).
    public var isRightToLeft: Bool {
        let subtags = key.split(separator: "-").map(String.init)
        if let script = subtags.dropFirst().first(where: { $0.count == 4 && $0.allSatisfy(\.isLetter) }) {
            return Self.rightToLeftScripts.contains(script)
        }
        return subtags.first.map { Self.rightToLeftLanguages.contains($0) } ?? false
    }

    private static let rightToLeftScripts: Set<String> = ["arab", "hebr", "syrc", "thaa", "nkoo", "adlm", "rohg"]
    private static let rightToLeftLanguages: Set<String> = [
        "ar", "he", "iw", "fa", "ur", "ps", "sd", "ug", "yi", "dv", "ckb", "syr", "ks",
    ]

    public static func == (a: LanguageTag, b: LanguageTag) -> Bool { a.key == b.key }
    public func hash(into hasher: inout Hasher) { hasher.combine(key) }

    // MARK: RFC 5646 §2.1's grammar

    /// Whether `text` matches `Language-Tag = langtag / privateuse / grandfathered` (case-insensitive).
    static func isWellFormed(_ text: String) -> Bool {
        let lower = text.lowercased()
        if grandfathered.contains(lower) { return true }
        let subtags = lower.split(separator: "-", omittingEmptySubsequences: false).map { Array($0.utf8) }
        guard let first = subtags.first, subtags.allSatisfy({ !$0.isEmpty && $0.count <= 8 && $0.allSatisfy(isAlphanumeric) })
        else { return false }
        if first == [UInt8(ascii: "x")] { return isPrivateUse(subtags[...]) }
        return isLangtag(subtags)
    }

    private static func isLangtag(_ subtags: [[UInt8]]) -> Bool {
        var i = 0
        let language = subtags[0]
        guard language.allSatisfy(isAlpha), (2...8).contains(language.count) else { return false }
        i = 1
        // extlang: up to three 3-letter subtags, only after a 2- or 3-letter language.
        if language.count <= 3 {
            var extlangs = 0
            while i < subtags.count, extlangs < 3, subtags[i].count == 3, subtags[i].allSatisfy(isAlpha) {
                i += 1
                extlangs += 1
            }
        }
        if i < subtags.count, subtags[i].count == 4, subtags[i].allSatisfy(isAlpha) { i += 1 }  // script
        if i < subtags.count,  // region
            (subtags[i].count == 2 && subtags[i].allSatisfy(isAlpha))
                || (subtags[i].count == 3 && subtags[i].allSatisfy(isDigit))
        {
            i += 1
        }
        while i < subtags.count, isVariant(subtags[i]) { i += 1 }
        while i < subtags.count, subtags[i].count == 1, subtags[i] != [UInt8(ascii: "x")] {  // extensions
            i += 1
            let start = i
            while i < subtags.count, (2...8).contains(subtags[i].count) { i += 1 }
            guard i > start else { return false }
        }
        if i < subtags.count { return isPrivateUse(subtags[i...]) }
        return true
    }

    /// `privateuse = "x" 1*("-" (1*8alphanum))`.
    private static func isPrivateUse(_ subtags: ArraySlice<[UInt8]>) -> Bool {
        subtags.first == [UInt8(ascii: "x")] && subtags.count >= 2
    }

    /// `variant = 5*8alphanum / (DIGIT 3alphanum)`.
    private static func isVariant(_ subtag: [UInt8]) -> Bool {
        (5...8).contains(subtag.count) || (subtag.count == 4 && isDigit(subtag[0]))
    }

    private static func isAlpha(_ byte: UInt8) -> Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) }
    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
    private static func isAlphanumeric(_ byte: UInt8) -> Bool { isAlpha(byte) || isDigit(byte) }

    /// RFC 5646's grandfathered tags (irregular and regular), lower case.
    private static let grandfathered: Set<String> = [
        "en-gb-oed", "i-ami", "i-bnn", "i-default", "i-enochian", "i-hak", "i-klingon", "i-lux", "i-mingo",
        "i-navajo", "i-pwn", "i-tao", "i-tay", "i-tsu", "sgn-be-fr", "sgn-be-nl", "sgn-ch-de", "art-lojban",
        "cel-gaulish", "no-bok", "no-nyn", "zh-guoyu", "zh-hakka", "zh-min", "zh-min-nan", "zh-xiang",
    ]
}

extension JSONObjectReader {
    /// An optional language tag (absent or `null`: nil); one that is not well-formed is refused as
    /// `invalidLocale` naming the field.
    func optionalLanguageTag(_ key: String) throws(VisitInputError) -> LanguageTag? {
        guard let text = try VisitInputError.reading({ () throws(FieldProblem) in try optionalString(key) }) else {
            return nil
        }
        guard let tag = LanguageTag(text) else {
            let field = fieldPath(key)
            throw VisitInputError(code: .invalidLocale, field: field, message: "\(field): \(LanguageTag.requirement)")
        }
        return tag
    }
}

extension JSONObjectReader {
    /// A stored language tag (an event's or a snapshot's `locale`): checked again, so a damaged one is
    /// refused as corrupt data rather than trusted.
    func storedLanguageTag(_ key: String) throws(FieldProblem) -> LanguageTag? {
        guard let text = try optionalString(key) else { return nil }
        guard let tag = LanguageTag(text) else { throw invalid(key, LanguageTag.requirement) }
        return tag
    }
}
