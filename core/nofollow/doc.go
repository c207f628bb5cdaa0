// Package nofollow opens what bulwark keeps under its state folder (the
// stack folders, state.json, journal.jsonl, lock, the providers' data
// folders) without ever following a symbolic link there, and without writing
// through a file that is not a plain file of its own.
//
// Guarantees:
//   - Open, ReadFile and Mkdir refuse a final path component that is a
//     symbolic link with a *LinkError naming the path; the link and what it
//     points to are left untouched (O_NOFOLLOW: no window between a check and
//     the open);
//   - Open refuses anything but a regular file (a fifo, a device, a folder)
//     with a *KindError, and, when opening for writing, a file with more than
//     one hard link (a hard link to a file outside the folder would otherwise
//     be written through);
//   - nothing here truncates: callers that replace a file do it by renaming a
//     temporary file they created over it (sdk/atomicfile), which replaces a
//     link instead of following it.
//
// Parent folders are followed: the state folder itself (--state-dir) is the
// user's choice and may be a link.
package nofollow
