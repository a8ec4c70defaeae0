import Foundation

/// A point on the Earth in WGS 84 degrees: where a visit's work happens (booked with the visit), or where a
/// technician is (a fix, never kept).
///
/// A visit's location is the customer's personal data: the domain carries it as text (`text`, the JSON
/// object `{"latitude":…,"longitude":…}`), which the write side seals under the customer's key before it
/// is stored, like the address (`VisitScheduled.location`).
public struct ServiceLocation: Sendable, Hashable {
    /// Degrees north, `-90...90`.
    public var latitude: Double
    /// Degrees east, `-180...180`.
    public var longitude: Double

    /// A location; nil when a coordinate is out of range or not finite.
    public init?(latitude: Double, longitude: Double) {
        guard latitude.isFinite, longitude.isFinite, (-90...90).contains(latitude), (-180...180).contains(longitude) else {
            return nil
        }
        self.latitude = latitude
        self.longitude = longitude
    }

    /// The mean radius of the Earth (IUGG), kilometres: the sphere great-circle distances are measured on.
    public static let earthRadiusKilometres = 6371.0088

    /// The great-circle distance to `other` in kilometres (haversine on the mean sphere: within 0.5 % of the
    /// ellipsoid's, and exact enough for a distance shown to one decimal).
    public func kilometres(to other: ServiceLocation) -> Double {
        let radians = Double.pi / 180
        let latitude1 = latitude * radians
        let latitude2 = other.latitude * radians
        let halfLatitude = sin((other.latitude - latitude) * radians / 2)
        let halfLongitude = sin((other.longitude - longitude) * radians / 2)
        let a = halfLatitude * halfLatitude + cos(latitude1) * cos(latitude2) * halfLongitude * halfLongitude
        let c = 2 * atan2(a.squareRoot(), (1 - a).squareRoot())
        return ServiceLocation.earthRadiusKilometres * c
    }

    /// `{"latitude","longitude"}`, the request's shape and what `GET /v1/visits/{id}` shows.
    public var json: JSONValue {
        .object([JSONMember("latitude", .number(latitude)), JSONMember("longitude", .number(longitude))])
    }

    /// `json` as text: what is sealed and stored.
    public var text: String { json.serializedString() }

    /// Reads `text` back; nil for anything else (a sealed value that was not opened, say).
    public init?(text: String) {
        guard let json = try? JSONValue.parse(Array(text.utf8)), let object = try? JSONObjectReader(json, path: ""),
            let latitude = try? object.double("latitude"), let longitude = try? object.double("longitude")
        else { return nil }
        self.init(latitude: latitude, longitude: longitude)
    }
}

extension JSONObjectReader {
    /// `location`: `{"latitude","longitude"}`, both required numbers in range (the refusal names
    /// `location.latitude` or `location.longitude`).
    func optionalLocation(_ key: String) throws(FieldProblem) -> ServiceLocation? {
        guard let object = try optionalObject(key) else { return nil }
        try object.rejectUnknown(allowed: ["latitude", "longitude"])
        let latitude = try object.coordinate("latitude", limit: 90)
        let longitude = try object.coordinate("longitude", limit: 180)
        return ServiceLocation(latitude: latitude, longitude: longitude)
    }

    /// A coordinate in degrees within `-limit...limit`.
    func coordinate(_ key: String, limit: Double) throws(FieldProblem) -> Double {
        let value = try double(key)
        guard (-limit...limit).contains(value) else {
            throw invalid(key, "expected degrees between -\(Int(limit)) and \(Int(limit))")
        }
        return value
    }
}
