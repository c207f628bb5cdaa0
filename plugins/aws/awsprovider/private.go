package awsprovider

import (
	"encoding/json"
	"time"
)

// record is the provider's private data for a resource it made (the
// contract's private bytes): which bucket or table, in which region, made
// by the Create under which key. The host stores it with the resource in
// the state, sealed, wherever the state lives, and hands it back on every
// Read, Update and Delete; so any machine that runs the stack has it, and
// nothing about a resource lives in the data folder of the machine that
// made it (the provider keeps nothing there).
//
// What it cannot carry is a Create's own crash: it exists only once Create
// has answered. The window of a Create that dies midway is closed on the
// resource itself instead, found again by the idempotency key the host
// journals before it calls Create:
//   - a table gets the key as a tag in its CreateTable (atomically on AWS);
//   - a bucket gets it as a tag in its CreateBucket (atomically on AWS,
//     given s3:TagResource; without it the bucket is made untagged), then
//     as the object .bulwark/idempotency-key.
//
// An endpoint that drops tags given at creation (the emulators) leaves a
// window between making the resource and marking it: a Create killed in it
// leaves a bucket or table that carries no key, which no retry claims (a
// conflict naming it; `bulwark import` takes it over). Before private data,
// a file in the data folder (create-intents.json) closed that window on the
// one machine that made the resource only; it is no longer read.
type record struct {
	Type    string    `json:"type"`
	Name    string    `json:"name"`
	Region  string    `json:"region,omitempty"`
	Key     string    `json:"key"`
	Created time.Time `json:"created"`
}

// private encodes r as private data.
func (r record) private() []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // strings and a time: always encodes
	}
	return b
}

// parseRecord decodes private data; false when there is none or it is not
// a record of typ (written by another version, or damaged).
func parseRecord(b []byte, typ string) (record, bool) {
	var r record
	if len(b) == 0 || json.Unmarshal(b, &r) != nil || r.Type != typ || r.Name == "" {
		return record{}, false
	}
	return r, true
}

// carriedKey is the idempotency key a resource was created under, as the
// host hands it back: from the private data when there is a record, else
// from the attributes (resources recorded before private data was).
func carriedKey(private []byte, typ string, attrs map[string]any) string {
	if r, ok := parseRecord(private, typ); ok && r.Key != "" {
		return r.Key
	}
	k, _ := attrs[attrKey].(string)
	return k
}
