//go:build !linux

package benchharness

import "os"

// maxRSS is unknown off Linux (units differ between systems): 0.
func maxRSS(*os.ProcessState) int64 { return 0 }
