package benchharness

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// ToolRemote names bulwark's results on Config.StateURL's backend:
// "bulwark@postgres" for a postgres:// URL. The file backend's stay
// ToolBulwark, measured in the same run, each run beside the other.
func ToolRemote(stateURL string) string {
	scheme, _, _ := strings.Cut(stateURL, "://")
	return ToolBulwark + "@" + scheme
}

// ParseStateURL checks a -state URL: a backend off this machine
// (postgres://, postgresql:// or s3://); the file backend is the one
// measured beside it anyway.
func ParseStateURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url's error quotes the whole URL, password and all.
		return "", fmt.Errorf("-state %s: not a URL", Redact(raw))
	}
	switch u.Scheme {
	case "postgres", "postgresql", "s3":
		return raw, nil
	case "", "file":
		return "", fmt.Errorf("-state %s: want a backend off this machine (postgres://USER@HOST:PORT/DB?sslmode=… or s3://BUCKET/PREFIX); the file backend is measured beside it in every run", Redact(raw))
	}
	return "", fmt.Errorf("-state %s: unknown scheme %q (want postgres:// or s3://)", Redact(raw), u.Scheme)
}

// Redact is a URL with its password masked, for messages and the report
// (also in what does not parse as a URL).
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return userPassword.ReplaceAllString(raw, "$1:xxxxx@")
	}
	if u.User == nil {
		return raw
	}
	return u.Redacted()
}

var userPassword = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9+.-]*://[^/:@]*):[^/@]*@`)

var notIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// stackStateURL is the URL one stack run keeps its state at: on PostgreSQL
// a schema of its own (?schema=bench_SHAPE_N_RANDOM, after the URL's own
// schema when it names one), on S3 a prefix of its own, so repeated runs
// and runs of other stacks never meet, in this run or an earlier one.
func stackStateURL(raw string, shape Shape, n int) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", err
	}
	tag := fmt.Sprintf("bench_%s_%d_%s", shape, n, hex.EncodeToString(rnd[:]))
	switch u.Scheme {
	case "postgres", "postgresql":
		q := u.Query()
		schema := tag
		if s := q.Get("schema"); s != "" {
			schema = notIdent.ReplaceAllString(strings.ToLower(s), "_") + "_" + tag
		}
		q.Set("schema", schema)
		u.RawQuery = q.Encode()
	case "s3":
		u.Path = strings.TrimSuffix(u.Path, "/") + "/" + strings.ReplaceAll(tag, "_", "-")
	default:
		return "", errors.New("not a postgres:// or s3:// URL")
	}
	return u.String(), nil
}

// stateFlags are the global flags of one bulwark stack run: the file
// backend under stateDir, or stateURL's backend with the providers' data
// folders under stateDir.
func stateFlags(pluginDir, stateDir, stateURL string) []string {
	f := []string{"--plugin-dir", pluginDir, "--state-dir", stateDir}
	if stateURL != "" {
		f = append(f, "--state", stateURL)
	}
	return f
}
