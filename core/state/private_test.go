package state

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestPrivateStoredForm(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stored  string // the JSON string as stored
		bytes   string // Bytes, in clear
		zero    bool
		damaged bool
	}{
		{name: "none", stored: "", zero: true},
		{name: "clear", stored: "cHJpdg==", bytes: "priv"},
		{name: "binary", stored: "AP8=", bytes: "\x00\xff"},
		// sealed: TestPrivateDataIsSealed
		{name: "damaged", stored: "not base64!", damaged: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Resource
			raw, _ := json.Marshal(tc.stored)
			if err := json.Unmarshal([]byte(`{"name":"a","private":`+string(raw)+`}`), &r); err != nil {
				t.Fatal(err)
			}
			if got := string(r.PrivateData()); got != tc.bytes {
				t.Errorf("PrivateData = %q, want %q", got, tc.bytes)
			}
			if r.Private.IsZero() != tc.zero {
				t.Errorf("IsZero = %v, want %v", r.Private.IsZero(), tc.zero)
			}
			if err := r.Private.decodeError(); (err != nil) != tc.damaged {
				t.Errorf("decodeError = %v, want damaged %v", err, tc.damaged)
			}
			// Written back byte for byte as it was read.
			out, err := r.AppendJSON(nil)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(&r)
			if string(out) != string(want) {
				t.Errorf("AppendJSON %s != json.Marshal %s", out, want)
			}
			var back Resource
			if err := json.Unmarshal(out, &back); err != nil {
				t.Fatal(err)
			}
			if back.Private.Text() != tc.stored {
				t.Errorf("stored again as %q, want %q", back.Private.Text(), tc.stored)
			}
		})
	}
}

// The data is decoded once, when read, never on a request: handing it to a
// provider costs no allocation.
func TestPrivateDataIsNotDecodedPerRequest(t *testing.T) {
	r := &Resource{Name: "a"}
	r.SetPrivate([]byte("some provider data, of some length"))
	if n := testing.AllocsPerRun(100, func() { _ = r.PrivateData() }); n != 0 {
		t.Errorf("PrivateData allocates %v times a call, want 0", n)
	}
}

// A state whose private data was damaged (edited by hand) is refused,
// naming the resource, rather than handing its provider none; state forget
// (except) can still drop it.
func TestCheckPrivateRefusesDamaged(t *testing.T) {
	var st State
	if err := json.Unmarshal([]byte(`{"resources":{"ok":{"name":"ok","private":"cHJpdg=="},"bad":{"name":"bad","private":"%%%"}}}`), &st); err != nil {
		t.Fatal(err)
	}
	err := CheckPrivate(&st)
	var pe *PrivateError
	if !errors.As(err, &pe) || pe.Resource != "bad" || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("CheckPrivate = %v, want a *PrivateError for bad", err)
	}
	if err := CheckPrivate(&st, "bad"); err != nil {
		t.Errorf("CheckPrivate except bad = %v", err)
	}
}
