/// Picks stream indexes 0..<count, uniformly or Zipf-skewed (index k with weight 1/(k+1)^s).
struct StreamPicker: Sendable {
    enum Distribution: String, CaseIterable, Sendable { case uniform, zipf }

    let distribution: Distribution
    let count: Int
    /// Cumulative weights for Zipf, normalised to 1.
    private let cumulative: [Double]

    init(_ distribution: Distribution, count: Int, exponent: Double = 0.99) {
        self.distribution = distribution
        self.count = count
        if distribution == .zipf {
            var sum = 0.0
            var c: [Double] = []
            c.reserveCapacity(count)
            for k in 0..<count {
                sum += 1 / pow(Double(k + 1), exponent)
                c.append(sum)
            }
            cumulative = c.map { $0 / sum }
        } else {
            cumulative = []
        }
    }

    func pick<G: RandomNumberGenerator>(using generator: inout G) -> Int {
        switch distribution {
        case .uniform:
            return Int.random(in: 0..<count, using: &generator)
        case .zipf:
            let u = Double.random(in: 0..<1, using: &generator)
            var low = 0
            var high = cumulative.count - 1
            while low < high {
                let mid = (low + high) / 2
                if cumulative[mid] < u { low = mid + 1 } else { high = mid }
            }
            return low
        }
    }
}

#if canImport(Glibc)
    import Glibc
#else
    import Foundation
#endif
