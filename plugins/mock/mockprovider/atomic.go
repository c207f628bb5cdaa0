package mockprovider

import (
	"os"

	"github.com/bulwark-iac/bulwark/sdk/atomicfile"
)

// File and folder modes of everything this provider writes.
const (
	fileMode os.FileMode = 0o600
	dirMode  os.FileMode = 0o700
)

// writeFileAtomic replaces name with data, mode 0600, so that a process that
// comes back after a crash sees the old content or the new one, never a mix.
func writeFileAtomic(name string, data []byte) error {
	return atomicfile.Write(name, data, fileMode)
}

// syncDir makes a folder's entries (a rename, a new file) durable.
func syncDir(dir string) error { return atomicfile.SyncDir(dir) }
