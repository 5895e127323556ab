import Support
import Testing

/// The one escaper for XML and HTML: content and quoted attributes alike.
struct MarkupTests {
    @Test func everythingThatEndsTextOrAnAttributeIsEscaped() {
        #expect(Markup.escape(#"a & b < c > d "e" 'f'"#) == "a &amp; b &lt; c &gt; d &quot;e&quot; &#39;f&#39;")
        #expect(Markup.escape("line 1\nline 2\ttab\r") == "line 1&#10;line 2&#9;tab&#13;")
        #expect(Markup.escape("plain: ünïcödé 耳机") == "plain: ünïcödé 耳机")
    }

    @Test func charactersXMLCannotCarryBecomeTheReplacementCharacter() {
        #expect(Markup.escape("a\u{0}b\u{1B}c\u{FFFE}") == "a\u{FFFD}b\u{FFFD}c\u{FFFD}")
    }
}

/// The one CSV writer: RFC 4180 quoting and CRLF rows.
struct CSVTests {
    @Test func fieldsAreQuotedOnlyWhenTheyMustBe() {
        #expect(CSV.field("plain") == "plain")
        #expect(CSV.field("a,b") == "\"a,b\"")
        #expect(CSV.field("say \"hi\"") == "\"say \"\"hi\"\"\"")
        #expect(CSV.field("two\nlines") == "\"two\nlines\"")
        #expect(CSV.field("crlf\r\n") == "\"crlf\r\n\"")
        #expect(CSV.document([["a", "b,c"], ["1", ""]]) == "a,\"b,c\"\r\n1,\r\n")
    }
}
