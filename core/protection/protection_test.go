package protection

import "testing"

// A level's text is the word a state records it by, "" for Unspecified,
// and reads back to the same level; anything else is refused both ways.
func TestText(t *testing.T) {
	tests := []struct {
		l    Level
		text string
	}{
		{Unspecified, ""},
		{Ephemeral, "ephemeral"},
		{Durable, "durable"},
		{Protected, "protected"},
	}
	for _, tt := range tests {
		b, err := tt.l.MarshalText()
		if err != nil || string(b) != tt.text {
			t.Errorf("%v: MarshalText = %q %v, want %q", tt.l, b, err, tt.text)
		}
		var back Level = 42
		if err := back.UnmarshalText([]byte(tt.text)); err != nil || back != tt.l {
			t.Errorf("UnmarshalText(%q) = %v %v, want %v", tt.text, back, err, tt.l)
		}
	}
	for _, l := range []Level{-1, 4, 99} {
		if b, err := l.MarshalText(); err == nil {
			t.Errorf("level %d marshalled as %q", int(l), b)
		}
	}
	for _, w := range []string{"unspecified", "Protected", " durable", "weird"} {
		var l Level
		if err := l.UnmarshalText([]byte(w)); err == nil {
			t.Errorf("%q read as %v", w, l)
		}
	}
}
