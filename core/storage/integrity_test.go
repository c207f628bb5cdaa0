package storage_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

func TestIntegrity(t *testing.T) {
	at := storage.Where{Backend: "postgres://ci@db/infra", Stack: "web", Record: `resource "db" (table bulwark.resources)`}
	record := []byte(`{"name":"db","protection":"durable","attributes":{"size":1}}`)
	stored, err := storage.Enclose(record)
	if err != nil {
		t.Fatal(err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, stored, "", "  "); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		stored []byte
		legacy bool   // DiscloseLegacy takes it as it is
		want   string // in the error; "" for none
	}{
		{name: "as stored", stored: stored},
		{name: "pretty-printed by a tool", stored: pretty.Bytes()},
		{name: "protection lowered by hand", stored: bytes.Replace(stored, []byte(`"durable"`), []byte(`"ephemeral"`), 1), want: "does not match its checksum (recorded sha256:"},
		{name: "checksum removed", stored: bytes.Replace(stored, []byte(`"checksum"`), []byte(`"sum"`), 1), want: "carries no checksum"},
		{name: "empty checksum", stored: []byte(`{"checksum":"","record":{"name":"db"}}`), want: "carries no checksum"},
		{name: "no record", stored: []byte(`{"checksum":"sha256:00"}`), want: "no record"},
		{name: "not JSON", stored: []byte(`{"checksum": damaged`), want: "is not a checksummed record"},
		{name: "a record written before checksums", stored: record, legacy: true, want: "carries no checksum"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := storage.Disclose(tt.stored, at)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Disclose: %v", err)
				}
				var a, b bytes.Buffer
				json.Compact(&a, got)
				json.Compact(&b, record)
				if a.String() != b.String() {
					t.Fatalf("Disclose returned %s, want %s", got, record)
				}
			} else {
				var ie *storage.IntegrityError
				if !errors.As(err, &ie) || !errors.Is(err, state.ErrCorrupt) || !errors.Is(err, storage.ErrIntegrity) {
					t.Fatalf("Disclose: %v, want an IntegrityError matching state.ErrCorrupt", err)
				}
				msg := err.Error()
				for _, part := range []string{tt.want, at.Backend, "stack web", at.Record, "restore the newest good copy from " + storage.DefaultRestore} {
					if !strings.Contains(msg, part) {
						t.Errorf("the error %q does not say %q", msg, part)
					}
				}
			}
			rec, legacy, err := storage.DiscloseLegacy(tt.stored, at)
			switch {
			case tt.legacy:
				if err != nil || !legacy || !bytes.Equal(rec, tt.stored) {
					t.Fatalf("DiscloseLegacy: %s %v %v, want the record as it is", rec, legacy, err)
				}
			case tt.want == "":
				if err != nil || legacy {
					t.Fatalf("DiscloseLegacy: %v %v", legacy, err)
				}
			default:
				if err == nil || legacy {
					t.Fatalf("DiscloseLegacy took a damaged record: %v %v", legacy, err)
				}
			}
		})
	}
}

// AppendEnclosed makes, of a compact record, the bytes Enclose makes.
func TestAppendEnclosed(t *testing.T) {
	for _, record := range []string{`{"put":[{"name":"a<b","protection":"durable"}]}`, `{}`, `{"delete":["x"]}`} {
		want, err := storage.Enclose([]byte(record))
		if err != nil {
			t.Fatal(err)
		}
		got := storage.AppendEnclosed([]byte("prefix:"), []byte(record))
		if string(got) != "prefix:"+string(want) {
			t.Errorf("AppendEnclosed(%s) = %s, want prefix:%s", record, got, want)
		}
		if rec, err := storage.Disclose(got[len("prefix:"):], storage.Where{}); err != nil || string(rec) != record {
			t.Errorf("Disclose: %s %v", rec, err)
		}
	}
}
