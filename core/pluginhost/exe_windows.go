//go:build windows

package pluginhost

// exeSuffix ends an executable's name: on Windows a file's mode has no
// execute bits, and the suffix is what makes it a program.
const exeSuffix = ".exe"
