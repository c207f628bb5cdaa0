package storage

import (
	"os"
	"os/user"
	"strings"
)

// UserEnv names the variable that overrides who an operation is recorded
// as (a CI bot's name, say): its value wins over the account's.
const UserEnv = "BULWARK_USER"

// CurrentUser is who runs this process, as lock records, journal start
// records and revisions name them: $BULWARK_USER when set, else the
// account's login name (os/user), else $USER, else "".
func CurrentUser() string {
	if u := clean(os.Getenv(UserEnv)); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil && clean(u.Username) != "" {
		return clean(u.Username)
	}
	return clean(os.Getenv("USER"))
}

// clean keeps a name to one printable line of at most 128 bytes: it is
// printed in messages and tables, never a terminal's control sequence.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, strings.TrimSpace(s))
	if len(s) > 128 {
		s = s[:128]
	}
	return s
}
