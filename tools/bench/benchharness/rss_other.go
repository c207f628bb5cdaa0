//go:build !linux

package benchharness

import (
	"os"
	"time"
)

// maxRSS is unknown off Linux (units differ between systems): 0.
func maxRSS(*os.ProcessState) int64 { return 0 }

// finalCPU is unknown off Linux: the sampled value stands.
func finalCPU(int) (time.Duration, bool) { return 0, false }
