package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/bulwark-iac/bulwark/backends"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// state-protection STACK RESOURCE LEVEL rewrites the protection STACK's
// state records for RESOURCE (as an old bulwark would), in what the backend
// stores: on files, state.json; on postgres, the resource's row; on s3,
// the object holding its newest form (a WAL object or the snapshot); each
// keeping its checksum valid, so only the level is wrong. No backend
// commits a level it does not know, so an edit is how one gets there.
func cmdStateProtection(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: state-protection STACK RESOURCE LEVEL")
	}
	editProtection(ts, args[0], args[1], args[2], true)
}

// state-hand-edit STACK RESOURCE LEVEL is state-protection as a person with
// a text editor, psql or the aws CLI would do it: the level changed where
// the backend stores it, the checksum left as it was.
func cmdStateHandEdit(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: state-hand-edit STACK RESOURCE LEVEL")
	}
	editProtection(ts, args[0], args[1], args[2], false)
}

// rechecksum re-encloses a record a checksummed stored form held
// (storage.Enclose), after edit changed it: with its checksum made anew
// when fix, else with the one it had (a hand edit).
func rechecksum(ts *testscript.TestScript, stored []byte, edit func([]byte) []byte, fix bool) []byte {
	var env struct {
		Checksum string          `json:"checksum"`
		Record   json.RawMessage `json:"record"`
	}
	ts.Check(json.Unmarshal(stored, &env))
	if env.Checksum == "" {
		// A record written without a checksum (an older format): edited
		// as it is.
		return edit(stored)
	}
	rec := edit(env.Record)
	if fix {
		out, err := storage.Enclose(rec)
		ts.Check(err)
		return out
	}
	out, err := json.Marshal(map[string]any{"checksum": env.Checksum, "record": json.RawMessage(rec)})
	ts.Check(err)
	return out
}

func editProtection(ts *testscript.TestScript, stack, name, level string, fix bool) {
	if backends.Remote(scriptState(ts)) {
		remoteStateProtection(ts, stack, name, level, fix)
		return
	}
	path := ts.MkAbs(filepath.Join(".bulwark", stack, "state.json"))
	_, err := editFileState(path, func(st map[string]any) error {
		rs, _ := st["resources"].(map[string]any)
		r, ok := rs[name].(map[string]any)
		if !ok {
			return fmt.Errorf("%s records no resource %q", path, name)
		}
		r["protection"] = level
		return nil
	}, fix)
	ts.Check(err)
}

// editFileState rewrites the state the file backend's state.json at path
// holds with edit (numbers kept as they were written), its sha256 checksum
// made anew when fix, else left as it was (a hand edit), and returns what
// it wrote.
func editFileState(path string, edit func(st map[string]any) error, fix bool) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var env struct {
		Checksum string          `json:"checksum"`
		State    json.RawMessage `json:"state"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(env.State))
	dec.UseNumber()
	var st map[string]any
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := edit(st); err != nil {
		return nil, err
	}
	body, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	checksum := "sha256:" + hex.EncodeToString(sum[:])
	if !fix {
		checksum = env.Checksum
	}
	out, err := json.Marshal(map[string]any{"checksum": checksum, "state": json.RawMessage(body)})
	if err != nil {
		return nil, err
	}
	out = append(out, '\n')
	return out, os.WriteFile(path, out, 0o600)
}

func remoteStateProtection(ts *testscript.TestScript, stack, name, level string, fix bool) {
	raw := scriptState(ts)
	setLevel := func(body []byte) []byte {
		var r map[string]any
		ts.Check(json.Unmarshal(body, &r))
		r["protection"] = level
		out, err := json.Marshal(r)
		ts.Check(err)
		return out
	}
	switch backends.Scheme(raw) {
	case "s3":
		s3StateProtection(ts, raw, stack, name, level, setLevel, fix)
	default:
		// postgres: the resource's row, edited in place.
		u, err := url.Parse(raw)
		ts.Check(err)
		q := u.Query()
		schema := q.Get("schema")
		q.Del("schema")
		u.RawQuery = q.Encode()
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, u.String())
		ts.Check(err)
		defer conn.Close(ctx)
		table := pgx.Identifier{schema, "resources"}.Sanitize()
		var body []byte
		ts.Check(conn.QueryRow(ctx, `SELECT body FROM `+table+` WHERE stack = $1 AND name = $2`, stack, name).Scan(&body))
		_, err = conn.Exec(ctx, `UPDATE `+table+` SET body = $3 WHERE stack = $1 AND name = $2`, stack, name, rechecksum(ts, body, setLevel, fix))
		ts.Check(err)
	}
}

// s3StateProtection edits the object that holds the resource's newest
// form: the newest WAL object after the snapshot that puts it, else the
// snapshot.
func s3StateProtection(ts *testscript.TestScript, raw, stack, name, level string, setLevel func([]byte) []byte, fix bool) {
	u, err := url.Parse(raw)
	ts.Check(err)
	endpoint := u.Query().Get("endpoint")
	base := endpoint + "/" + u.Host + "/" + strings.Trim(u.Path, "/") + "/" + stack + "/"
	get := func(key string) []byte {
		resp, err := s3Do(http.MethodGet, base+key, nil)
		ts.Check(err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		ts.Check(err)
		if resp.StatusCode == http.StatusNotFound {
			return nil
		}
		if resp.StatusCode != http.StatusOK {
			ts.Fatalf("get %s: %s", key, resp.Status)
		}
		return b
	}
	put := func(key string, body []byte) {
		// Deleted first: the emulator would keep the old object's checksum.
		for _, m := range []string{http.MethodDelete, http.MethodPut} {
			resp, err := s3Do(m, base+key, map[string][]byte{http.MethodPut: body}[m])
			ts.Check(err)
			resp.Body.Close()
			if resp.StatusCode >= 300 {
				ts.Fatalf("%s %s: %s", m, key, resp.Status)
			}
		}
	}
	// Every object is a checksummed record (storage.Enclose): what is
	// edited is its record.
	record := func(stored []byte) []byte {
		var rec []byte
		rechecksum(ts, stored, func(r []byte) []byte { rec = r; return r }, true)
		return rec
	}
	var snap map[string]json.RawMessage
	var snapSeq int64
	snapStored := get("snapshot.json")
	if snapStored != nil {
		ts.Check(json.Unmarshal(record(snapStored), &snap))
		ts.Check(json.Unmarshal(snap["seq"], &snapSeq))
	}
	prefix := strings.Trim(u.Path, "/") + "/" + stack + "/wal/"
	resp, err := s3Do(http.MethodGet, endpoint+"/"+u.Host+"?list-type=2&prefix="+url.QueryEscape(prefix), nil)
	ts.Check(err)
	var list struct {
		Contents []struct {
			Key string `xml:"Key"`
		} `xml:"Contents"`
	}
	ts.Check(xml.NewDecoder(resp.Body).Decode(&list))
	resp.Body.Close()
	for i := len(list.Contents) - 1; i >= 0; i-- {
		key := strings.TrimPrefix(list.Contents[i].Key, strings.Trim(u.Path, "/")+"/"+stack+"/")
		var seg struct {
			Seq     int64            `json:"seq"`
			Entries []map[string]any `json:"entries"`
		}
		stored := get(key)
		body := record(stored)
		ts.Check(json.Unmarshal(body, &seg))
		if seg.Seq <= snapSeq {
			break
		}
		for j := len(seg.Entries) - 1; j >= 0; j-- {
			puts, _ := seg.Entries[j]["put"].([]any)
			for _, p := range puts {
				if r, _ := p.(map[string]any); r != nil && r["name"] == name {
					r["protection"] = level
					var whole map[string]any
					ts.Check(json.Unmarshal(body, &whole))
					whole["entries"] = seg.Entries
					out, err := json.Marshal(whole)
					ts.Check(err)
					put(key, rechecksum(ts, stored, func([]byte) []byte { return out }, fix))
					return
				}
			}
		}
	}
	if snap == nil {
		ts.Fatalf("stack %s: no object holds resource %q", stack, name)
	}
	var st map[string]json.RawMessage
	ts.Check(json.Unmarshal(snap["state"], &st))
	var rs map[string]json.RawMessage
	ts.Check(json.Unmarshal(st["resources"], &rs))
	if rs[name] == nil {
		ts.Fatalf("stack %s: the snapshot holds no resource %q", stack, name)
	}
	rs[name] = setLevel(rs[name])
	st["resources"], err = json.Marshal(rs)
	ts.Check(err)
	snap["state"], err = json.Marshal(st)
	ts.Check(err)
	out, err := json.Marshal(snap)
	ts.Check(err)
	put("snapshot.json", rechecksum(ts, snapStored, func([]byte) []byte { return out }, fix))
}
