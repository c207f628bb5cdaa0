//go:build !unix

package localprovider

import "io/fs"

// openNoFollow: no such flags here; the checks before and after the open
// refuse links and what is not a regular file.
const openNoFollow = 0

// linkCount is unknown here.
func linkCount(fs.FileInfo) (uint64, bool) { return 0, false }
