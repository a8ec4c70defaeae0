import Foundation
import JSON
import Postgres
import Runtime

/// Opens the sealed personal fields of a JSON document on its way out — an API answer (visit, list,
/// history, a stored idempotent answer) or a push body at send time: each `customerFirstName`,
/// `serviceAddress`, `jobSummary`, `reason`, `vanDescription` (a failed visit's shows its reason) and
/// `location` whose value is a `SealedText` becomes its plain text (a `location` the JSON object it holds),
/// or `null` when the customer's data key is gone (erased)
/// — a sealed `vanDescription` then reads its fallback, the technician's van. Everything else is written
/// back as it was.
///
/// A value that cannot be read — its data key wrapped under a key file this process lacks, a wrapped key
/// or a value failing authentication — reads `null` too, as an erased customer's: one such row never fails
/// a whole list. Each object holding one is counted in `livevisits_personal_data_unreadable_total`, and the
/// first time in a process a customer's data key is found unreadable one warning names that key (never the
/// data). `Opened.unreadableFields` tells callers that must not go on with it (a start push) apart.
///
/// The one place plain personal data is made; nothing it returns is stored.
public struct PersonalDataOpener: Sendable {
    public static let fields: Set<String> = [
        "customerFirstName", "serviceAddress", "jobSummary", "reason", "vanDescription", "location",
    ]
    /// The fields whose plain text is a JSON document, written in place of the sealed string (a visit's
    /// `location`, `{"latitude","longitude"}`); plain text that is not JSON reads `null`.
    static let jsonFields: Set<String> = ["location"]
    /// The fields whose `SealedText.fallback` is read when they cannot be opened.
    static let fallbackFields: Set<String> = ["vanDescription"]

    public let keys: PersonalDataKeys
    /// Keys recently read, used while it hears erasures; nil: every opening reads its keys.
    public let cache: PersonalDataKeyCache?

    /// Where unreadable values are counted.
    public let metrics: Metrics

    public init(keys: PersonalDataKeys, cache: PersonalDataKeyCache? = nil, metrics: Metrics = .shared) {
        self.keys = keys
        self.cache = cache
        self.metrics = metrics
    }

    /// Whether `bytes` may hold a sealed value (a cheap scan: answers without one pass untouched). Every API
    /// answer passes here: the scan runs over the bytes in place (`memchr` for the marker's first byte), not
    /// through a generic collection's iterator (3.4 % of `serve` under the API benchmark's load).
    public static func mayHoldSealed(_ bytes: Data) -> Bool {
        bytes.withUnsafeBytes { contains(SealedText.prefixBytes, in: $0) }
    }

    public static func mayHoldSealed(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { contains(SealedText.prefixBytes, in: $0) }
    }

    static func contains(_ marker: [UInt8], in buffer: UnsafeRawBufferPointer) -> Bool {
        guard let base = buffer.baseAddress, !marker.isEmpty, buffer.count >= marker.count else { return false }
        let last = buffer.count - marker.count
        var at = 0
        while at <= last {
            guard let hit = memchr(base + at, Int32(marker[0]), last - at + 1) else { return false }
            let i = base.distance(to: UnsafeRawPointer(hit))
            if marker.withUnsafeBytes({ memcmp(base + i, $0.baseAddress!, marker.count) }) == 0 { return true }
            at = i + 1
        }
        return false
    }

    /// What an opened document is: its bytes, how many fields read `null` because their key is gone
    /// (erased), and how many because they could not be read (see the type's comment).
    public struct Opened: Sendable {
        public let bytes: [UInt8]
        public let erasedFields: Int
        public var unreadableFields: Int { unreadable.count }
        /// Each field that could not be read: its key, the visit it belongs to (when named), why.
        let unreadable: [Unreadable]

        init(bytes: [UInt8], erasedFields: Int, unreadable: [Unreadable] = []) {
            self.bytes = bytes
            self.erasedFields = erasedFields
            self.unreadable = unreadable
        }
    }

    /// A sealed field answered `null` because it could not be read; `object` numbers the object holding it
    /// within the document, so that a visit's three fields count once.
    struct Unreadable: Sendable {
        let keyId: String
        let visitId: String?
        let object: Int
        let code: PersonalDataError.Code
    }

    /// The document with its sealed personal fields opened (unreadable ones `null`, counted and logged).
    /// Not JSON, or nothing sealed: as given. Keys the cache holds are not read; the others are read on
    /// `connection`. Throws only when reading the keys fails (the database).
    public func open(_ bytes: [UInt8], on connection: PostgresConnection) throws -> Opened {
        switch start(bytes) {
        case .opened(let opened): return reported(opened)
        case .reading(let pending): return reported(pending.finish(try keys.dataKeys(ids: pending.missing, on: connection)))
        }
    }

    /// The same, taking a connection of `pool` only when a key is not cached: an answer whose keys are all
    /// cached makes no round trip, and with a cache, concurrent answers read their missing keys together
    /// (`PersonalDataKeyCache.read`).
    public func open(_ bytes: [UInt8], pool: PostgresPool) async throws -> Opened {
        switch start(bytes) {
        case .opened(let opened): return reported(opened)
        case .reading(let pending):
            let keys = self.keys
            if let cache {
                return reported(pending.finish(try await cache.read(pending.missing, keys: keys, pool: pool)))
            }
            return reported(pending.finish(try await pool.withConnection { try keys.dataKeys(ids: pending.missing, on: $0) }))
        }
    }

    /// What one sealed value (a push token) opened to.
    public enum OpenedValue: Sendable {
        /// The plain text (also a value that was never sealed).
        case plain(String)
        /// Its customer's key is gone.
        case erased
        /// It, or its key, fails authentication or is wrapped under a key file this process lacks.
        case unreadable
    }

    /// The data keys that sealed values (push tokens) are opened with: read together, once per batch.
    public struct ValueKeys: Sendable {
        let keys: [String: PersonalDataKeys.DataKey]
        let unreadable: Set<String>
    }

    /// The keys `texts`' sealed values name: the cached ones (while the cache hears erasures), the others
    /// read in one query on a connection of `pool` (and remembered). Throws only when reading fails.
    public func valueKeys(_ texts: some Sequence<String>, pool: PostgresPool) async throws -> ValueKeys {
        let ids = Set(texts.lazy.compactMap { SealedText($0)?.keyId })
        guard !ids.isEmpty else { return ValueKeys(keys: [:], unreadable: []) }
        let cached = cache?.keys(ids) ?? [:]
        let missing = ids.filter { cached[$0] == nil }
        guard !missing.isEmpty else { return ValueKeys(keys: cached, unreadable: []) }
        let generation = cache?.generation()
        let keys = self.keys
        let read = try await pool.withConnection { try keys.dataKeys(ids: Array(missing), on: $0) }
        if let cache, let generation { cache.remember(read.keys.values, readAt: generation) }
        return ValueKeys(keys: cached.merging(read.keys) { cached, _ in cached }, unreadable: Set(read.unreadable.keys))
    }

    /// One value opened with `keys` (from `valueKeys`); text that is not sealed comes back as it is.
    public static func openValue(_ text: String, with keys: ValueKeys) -> OpenedValue {
        guard let sealed = SealedText(text) else { return .plain(text) }
        if keys.unreadable.contains(sealed.keyId) { return .unreadable }
        guard let key = keys.keys[sealed.keyId] else { return .erased }
        return PersonalDataKeys.open(sealed, with: key).map(OpenedValue.plain) ?? .unreadable
    }

    /// One sealed value opened with its customer's key (`valueKeys`, then `openValue(_:with:)`).
    public func openValue(_ text: String, pool: PostgresPool) async throws -> OpenedValue {
        PersonalDataOpener.openValue(text, with: try await valueKeys([text], pool: pool))
    }

    /// The metric: objects whose personal data read `null` because it could not be read.
    public static let unreadableMetric = "livevisits_personal_data_unreadable_total"

    /// Counts and logs what `opened` could not read, then hands it back.
    func reported(_ opened: Opened) -> Opened {
        guard !opened.unreadable.isEmpty else { return opened }
        metrics.increment(
            PersonalDataOpener.unreadableMetric,
            help: "Objects (a visit, an event, a push body) whose personal data read null because it could not be read.",
            by: Double(Set(opened.unreadable.map(\.object)).count))
        for problem in opened.unreadable where UnreadableLog.first(problem.keyId) {
            UnreadableLog.logger.warning(
                "personal data unreadable: answered as erased",
                [
                    "personal_data.key_id": problem.keyId, "visit.id": problem.visitId ?? "?",
                    "error": problem.code.description,
                ])
        }
        return opened
    }

    /// Where opening a document stands before any key is read: done from the cache alone, or waiting for the
    /// keys the cache lacks.
    enum Start {
        case opened(Opened)
        case reading(Pending)
    }

    /// A document whose sealed fields wait for the data keys `missing`, read from the database.
    struct Pending: Sendable {
        let document: JSONValue
        let cached: [String: PersonalDataKeys.DataKey]
        let missing: [String]
        let cache: PersonalDataKeyCache?
        /// Taken before the keys are read, so that a key erased meanwhile is not remembered.
        let generation: UInt64?

        /// The document opened with the keys read; they are remembered in the cache.
        func finish(_ read: PersonalDataKeys.Read) -> Opened {
            if let cache, let generation { cache.remember(read.keys.values, readAt: generation) }
            let keys = cached.merging(read.keys) { cached, _ in cached }
            return PersonalDataOpener.opened(document, keys: (keys, read.unreadable))
        }
    }

    /// Opens what the cache allows: the fast path, else the general one up to the keys it must read.
    func start(_ bytes: [UInt8]) -> Start {
        if let cache, let spans = PersonalDataOpener.sealedSpans(bytes) {
            // Taken before any key is looked up: a value opened with a key erased meanwhile is not remembered.
            let generation = cache.openedGeneration()
            let known = cache.openedValues(spans.map { ($0.text, $0.isJSON) })
            let ids = Set(zip(spans, known).lazy.filter { $0.1 == nil }.compactMap { SealedText($0.0.text)?.keyId })
            // Every value remembered (a board read again): no key to look up.
            let keys = ids.isEmpty ? [:] : cache.keys(ids)
            if let (opened, fresh) = PersonalDataOpener.opened(bytes, spans: spans, known: known, keys: keys) {
                cache.rememberOpened(fresh, readAt: generation)
                return .opened(opened)
            }
        }
        guard let (document, ids) = PersonalDataOpener.sealedIds(bytes) else {
            return .opened(Opened(bytes: bytes, erasedFields: 0))
        }
        let cached = cache?.keys(ids) ?? [:]
        let missing = ids.filter { cached[$0] == nil }
        guard !missing.isEmpty else { return .opened(PersonalDataOpener.opened(document, keys: (cached, [:]))) }
        return .reading(
            Pending(document: document, cached: cached, missing: missing, cache: cache, generation: cache?.generation()))
    }

    // MARK: the fast path

    /// A sealed field's value in a document as this project writes JSON (compact): the value's bytes, quotes
    /// included, and its text.
    struct SealedSpan {
        let range: Range<Int>
        /// The sealed value (`SealedText`'s text form), parsed only when it must be opened.
        let text: String
        /// Its field is one of `jsonFields`.
        let isJSON: Bool
    }

    static let fieldPrefixes: [(bytes: [UInt8], isJSON: Bool)] = fields.map {
        (Array("\"\($0)\":\"".utf8), jsonFields.contains($0))
    }

    /// Every sealed value of `bytes`, found without parsing: each `"enc:v1:` must be the value of one of
    /// `fields` written as `"<field>":"enc:v1:…"` (in valid JSON those bytes can be nothing else: a string
    /// holds no unescaped quote). Nil when there is none, or when one is written any other way (whitespace, a
    /// field not named here, an escape): the general path, which parses the document, decides those.
    static func sealedSpans(_ bytes: [UInt8]) -> [SealedSpan]? {
        let marker = [UInt8(ascii: "\"")] + SealedText.prefixBytes
        var spans: [SealedSpan] = []
        let found = bytes.withUnsafeBytes { buffer -> Bool in
            guard let base = buffer.baseAddress else { return true }
            let count = buffer.count
            var i = 0
            while i + marker.count <= count {
                // The next quote (`memchr`), then whether the marker starts there.
                guard let hit = memchr(base + i, Int32(marker[0]), count - marker.count - i + 1) else { break }
                i = base.distance(to: UnsafeRawPointer(hit))
                guard marker.withUnsafeBytes({ memcmp(base + i, $0.baseAddress!, marker.count) }) == 0 else {
                    i += 1
                    continue
                }
                // The field's key right before the opening quote.
                let named = fieldPrefixes.first { prefix in
                    i + 1 >= prefix.bytes.count && bytes[(i + 1 - prefix.bytes.count)...i].elementsEqual(prefix.bytes)
                }
                let start = i + 1
                guard let named, let quote = memchr(base + start, Int32(UInt8(ascii: "\"")), count - start) else {
                    return false
                }
                let close = base.distance(to: UnsafeRawPointer(quote))
                let value = UnsafeRawBufferPointer(rebasing: buffer[start..<close])
                guard memchr(value.baseAddress!, Int32(UInt8(ascii: "\\")), value.count) == nil else { return false }
                let text = String(decoding: value, as: UTF8.self)
                spans.append(SealedSpan(range: i..<(close + 1), text: text, isJSON: named.isJSON))
                i = close + 1
            }
            return true
        }
        return found && !spans.isEmpty ? spans : nil
    }

    /// `bytes` with each span's value opened in place (or `null` where the key is known gone); nil when a key is
    /// not in `keys` or a value fails authentication: the general path then reads what it needs and names
    /// the visit in its error.
    static func opened(_ bytes: [UInt8], spans: [SealedSpan], keys: [String: PersonalDataKeys.DataKey]) -> Opened? {
        opened(bytes, spans: spans, known: Array(repeating: nil, count: spans.count), keys: keys)?.opened
    }

    /// The same, with what some spans' values were opened to before (`known`, in the spans' order: nil where
    /// not known): also returns the values it opened itself, as it wrote them, to remember.
    static func opened(
        _ bytes: [UInt8], spans: [SealedSpan], known: [[UInt8]?], keys: [String: PersonalDataKeys.DataKey]
    ) -> (opened: Opened, fresh: [(text: String, isJSON: Bool, bytes: [UInt8])])? {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var fresh: [(text: String, isJSON: Bool, bytes: [UInt8])] = []
        var copied = 0
        for (span, known) in zip(spans, known) {
            out.append(contentsOf: bytes[copied..<span.range.lowerBound])
            copied = span.range.upperBound
            if let known {
                out.append(contentsOf: known)
                continue
            }
            guard let sealed = SealedText(span.text), let key = keys[sealed.keyId],
                let plain = PersonalDataKeys.open(sealed, with: key)
            else { return nil }
            var written: [UInt8] = []
            (span.isJSON ? jsonDocument(plain) : JSONValue.string(plain)).write(to: &written)
            out.append(contentsOf: written)
            fresh.append((span.text, span.isJSON, written))
        }
        out.append(contentsOf: bytes[copied...])
        return (Opened(bytes: out, erasedFields: 0), fresh)
    }

    /// The JSON document a `jsonFields` value's plain text holds (`null` when it holds none).
    static func jsonDocument(_ plain: String) -> JSONValue {
        (try? JSONValue.parse(Array(plain.utf8))) ?? .null
    }

    // MARK: the general path

    /// The parsed document and the key ids its sealed fields name; nil when there is nothing to open.
    static func sealedIds(_ bytes: [UInt8]) -> (JSONValue, [String])? {
        guard PersonalDataOpener.mayHoldSealed(bytes), let document = try? JSONValue.parse(bytes) else { return nil }
        var ids = Set<String>()
        PersonalDataOpener.collect(document, into: &ids)
        guard !ids.isEmpty else { return nil }
        return (document, Array(ids))
    }

    static func opened(
        _ document: JSONValue, keys: (keys: [String: PersonalDataKeys.DataKey], unreadable: [String: PersonalDataError])
    ) -> Opened {
        var tally = Tally()
        let opened = PersonalDataOpener.replace(document, visitId: nil, keys: keys, tally: &tally)
        return Opened(bytes: opened.serialized(), erasedFields: tally.erased, unreadable: tally.unreadable)
    }

    static func collect(_ value: JSONValue, into ids: inout Set<String>) {
        switch value {
        case .object(let members):
            for member in members {
                if fields.contains(member.key), case .string(let text) = member.value, let sealed = SealedText(text) {
                    ids.insert(sealed.keyId)
                } else {
                    collect(member.value, into: &ids)
                }
            }
        case .array(let items):
            for item in items { collect(item, into: &ids) }
        default: break
        }
    }

    /// What `replace` found on its way through a document.
    struct Tally {
        var erased = 0
        var unreadable: [Unreadable] = []
        var objects = 0
    }

    static func replace(
        _ value: JSONValue, visitId: String?,
        keys: (keys: [String: PersonalDataKeys.DataKey], unreadable: [String: PersonalDataError]), tally: inout Tally
    ) -> JSONValue {
        switch value {
        case .object(let members):
            tally.objects += 1
            let object = tally.objects
            var visit = visitId
            if case .string(let id)? = members.first(where: { $0.key == "visitId" })?.value { visit = id }
            var out: [JSONMember] = []
            out.reserveCapacity(members.count)
            for member in members {
                if fields.contains(member.key), case .string(let text) = member.value, let sealed = SealedText(text) {
                    let unopened: JSONValue =
                        fallbackFields.contains(member.key) ? sealed.fallback.map(JSONValue.string) ?? .null : .null
                    func unreadable(_ code: PersonalDataError.Code) {
                        tally.unreadable.append(Unreadable(keyId: sealed.keyId, visitId: visit, object: object, code: code))
                        out.append(JSONMember(member.key, unopened))
                    }
                    if let problem = keys.unreadable[sealed.keyId] {
                        unreadable(problem.code)
                        continue
                    }
                    guard let key = keys.keys[sealed.keyId] else {
                        tally.erased += 1
                        out.append(JSONMember(member.key, unopened))
                        continue
                    }
                    // Fails authentication: a changed row.
                    guard let plain = PersonalDataKeys.open(sealed, with: key) else {
                        unreadable(.unreadable)
                        continue
                    }
                    out.append(JSONMember(member.key, jsonFields.contains(member.key) ? jsonDocument(plain) : .string(plain)))
                } else {
                    out.append(JSONMember(member.key, replace(member.value, visitId: visit, keys: keys, tally: &tally)))
                }
            }
            return .object(out)
        case .array(let items):
            return .array(items.map { replace($0, visitId: visitId, keys: keys, tally: &tally) })
        default:
            return value
        }
    }
}

/// The customers (by data key id) already named in an "unreadable" warning by this process: each is logged
/// once. Past `capacity` ids it starts over (a customer may then be named again), so it stays small.
enum UnreadableLog {
    static let logger = Logger(label: "personal-data")
    static let capacity = 10_000
    private static let named = Lock<Set<String>>([])

    /// True the first time `keyId` is asked about (since the last start-over).
    static func first(_ keyId: String) -> Bool {
        named.withLock { named in
            if named.count >= capacity { named.removeAll() }
            return named.insert(keyId).inserted
        }
    }
}
