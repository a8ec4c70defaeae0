import Testing

@testable import VisitDomain

/// BCP 47 tags: well-formed per RFC 5646's grammar, compared without case, falling back subtag by subtag.
@Suite struct LanguageTagTests {
    @Test(arguments: [
        "en", "zh-Hans", "zh-Hans-CN", "zh-Hant-TW", "es-419", "sr-Latn-RS", "de-CH-1996", "sl-rozaj-biske",
        "zh-yue-HK", "en-US-u-islamcal", "en-a-myext-b-another", "x-whatever", "qaa-Qaaa-QM-x-southern",
        "i-klingon", "en-GB-oed", "ZH-HANS", "hy-Latn-IT-arevela",
    ])
    func wellFormed(_ text: String) {
        #expect(LanguageTag(text)?.text == text)
    }

    @Test(arguments: [
        "", "zh_Hans", "zh-", "-zh", "en--GB", "a-DE", "toolonglang", "en-a", "x", "en-x", "中文", "en GB", "en-GB-",
        "de-419-DE", "en-US-u", "123", "ab-toolongsubtag",
        String(repeating: "a-bc-", count: 20) + "x",
    ])
    func notWellFormed(_ text: String) {
        #expect(LanguageTag(text) == nil)
    }

    @Test func fallbackDropsTheLastSubtagAndIgnoresCase() throws {
        #expect(try #require(LanguageTag("zh-Hant-TW")).fallbackKeys == ["zh-hant-tw", "zh-hant", "zh"])
        #expect(try #require(LanguageTag("en-US-u-islamcal")).fallbackKeys == ["en-us-u-islamcal", "en-us", "en"])
        #expect(LanguageTag("ZH-hans") == LanguageTag("zh-Hans"))
    }

    @Test func rightToLeftByScriptOrLanguage() {
        #expect(LanguageTag("ar")?.isRightToLeft == true)
        #expect(LanguageTag("he-IL")?.isRightToLeft == true)
        #expect(LanguageTag("az-Arab")?.isRightToLeft == true)
        #expect(LanguageTag("zh-Hans")?.isRightToLeft == false)
        #expect(LanguageTag("ar-Latn")?.isRightToLeft == false)
    }
}
