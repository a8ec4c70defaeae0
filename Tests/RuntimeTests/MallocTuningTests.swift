import Runtime
import Testing

/// The allocator setting every `livevisits` process starts with, unless the operator tunes malloc.
@Suite struct MallocTuningTests {
    @Test func largeBlocksAreMappedFrom256KiB() {
        #expect(MallocTuning.threshold(environment: [:]) == 256 * 1024)
        #expect(MallocTuning.threshold(environment: ["PATH": "/usr/bin"]) == 256 * 1024)
    }

    @Test(arguments: ["GLIBC_TUNABLES", "MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_"])
    func theOperatorsOwnTuningWins(_ variable: String) {
        #expect(MallocTuning.threshold(environment: [variable: "glibc.malloc.arena_max=8"]) == nil)
        #expect(!MallocTuning.apply(environment: [variable: "4"]))
    }

    @Test func glibcTakesIt() {
        // What the product does at start, done here to this process: glibc answers mallopt with 1.
        #expect(MallocTuning.apply(environment: [:]))
    }
}
