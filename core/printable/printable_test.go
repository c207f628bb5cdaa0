package printable

import "testing"

func TestEscapes(t *testing.T) {
	for _, c := range []struct{ in, text, line string }{
		{"plain shop.yaml", "plain shop.yaml", "plain shop.yaml"},
		{"evil\x1b[2K\rx\nop_fake.yaml", "evil\\x1b[2K\\rx\nop_fake.yaml", "evil\\x1b[2K\\rx\\nop_fake.yaml"},
		{"a\tb\x07c\x7f", "a\tb\\ac\\x7f", "a\\tb\\ac\\x7f"},
		{"\u009bcsi", "\\u009bcsi", "\\u009bcsi"},               // the 8-bit CSI
		{"bad \xff byte", "bad \ufffd byte", "bad \ufffd byte"}, // an invalid byte: the replacement character
		{"héllo — ok", "héllo — ok", "héllo — ok"},
	} {
		if got := Text(c.in); got != c.text {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.text)
		}
		if got := Line(c.in); got != c.line {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, c.line)
		}
	}
}
