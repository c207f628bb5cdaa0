package spec

import "testing"

// Every pattern compiles (a lazyRE panics at its first use, not at init).
func TestPatternsCompile(t *testing.T) {
	for name, re := range map[string]lazyRE{
		"keyRE": keyRE, "stackNameRE": stackNameRE, "nameRE": nameRE, "yamlLineRE": yamlLineRE,
		"varNameRE": varNameRE, "outputNameRE": outputNameRE,
		"refVarRE": refVarRE, "refResRE": refResRE, "refHintRE": refHintRE, "refStackRE": refStackRE,
	} {
		if re() == nil {
			t.Errorf("%s: no regexp", name)
		}
	}
}
