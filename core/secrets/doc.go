// Package secrets keeps sensitive values out of everything bulwark writes or
// prints.
//
// A Key is 32 bytes for AES-256-GCM. It comes, in this order, from the
// environment variable BULWARK_SECRETS_KEY, from the file given with
// --secrets-key-file, or from the default key file in the user's config folder
// (os.UserConfigDir()/bulwark/secrets.key), which bulwark creates (mode 0600,
// its folder 0700) the first time a command that writes a state needs a key,
// and says so once. The key's text, in the variable and in a file alike, is the
// standard base64 encoding of the 32 bytes (44 characters, as
// `head -c 32 /dev/urandom | base64` prints); whitespace around it is ignored.
// A key file must not be readable by group or others. The key never goes
// into a state folder.
//
// That is the keyfile provider, the default. A stack may record another
// secrets provider in its state (provider.go: Config; docs/secrets.md):
// passphrase, a key derived with argon2id from BULWARK_SECRETS_PASSPHRASE,
// whose salt and a sealed verifier the state keeps, or awskms://, a data
// key wrapped by AWS KMS and opened through the KMS interface (the client
// is backends/awskms, so this package never imports the AWS SDK).
// Source.Resolve finds the key of a stack's Config; a key that is not the
// stack's is a *WrongKeyError.
//
// A Box seals values under a key and a context that binds them (a stack's
// name): each value gets its own random nonce, and a sealed value opens only
// with the same key and context, so it can be neither read nor altered nor
// moved to another stack unnoticed. Sealing is by value (SealValue,
// OpenValue), so whatever holds a sensitive value — a resource attribute, a
// revision's spec, a variable — seals it the same way. A sealed value is a
// string:
//
//	sealed:v1:<key id, 8 hex digits>:<base64url(nonce || ciphertext)>
//
// The key id (a hash of the key, which reveals nothing of it) lets an error
// tell a value sealed under another key from one that was tampered with.
//
// A Redactor is the set of sensitive strings one command has seen (provider
// config values, sensitive attributes, sensitive variables): Redact replaces
// each, raw or JSON-escaped, with "(sensitive)" in any text, so error
// messages, events and journal lines never carry them in clear.
package secrets
