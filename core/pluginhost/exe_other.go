//go:build !windows

package pluginhost

// exeSuffix ends an executable's name: nothing here, where the mode's
// execute bits make a file a program.
const exeSuffix = ""
