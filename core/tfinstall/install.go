package tfinstall

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
)

// Installer installs provider packages from a registry into Dir, in the
// unpacked layout (Dir/HOST/NAMESPACE/TYPE/VERSION/OS_ARCH/), where a
// Finder whose Locations list Dir finds them.
type Installer struct {
	Registry Registry
	// Dir is bulwark's provider folder (see ProviderDir).
	Dir string
	// Platform is the platform installed for; the zero value is the
	// current one.
	Platform Platform
	// TrustedKeys, when set, is an armored OpenPGP public key ring: the
	// SHA256SUMS of every package installed must carry a signature by one
	// of its keys. When empty, a signature is checked against the keys the
	// registry itself names (as Terraform does), and a package the
	// registry offers unsigned is installed unsigned, and said to be.
	TrustedKeys string
}

// Installed is what Install installed.
type Installed struct {
	Package *Package
	// Hashes are the package's h1: and the zh: of the archives SHA256SUMS
	// lists for this version (all platforms, when the signature was
	// checked; else the downloaded archive's alone), sorted: what the lock
	// records.
	Hashes []Hash
	// Trust says how SHA256SUMS was authenticated: TrustKey, TrustRegistry
	// or TrustNone; KeyID is the signing key's id, in hex.
	Trust Trust
	KeyID string
}

// Trust is how a package's SHA256SUMS was authenticated.
type Trust string

const (
	TrustKey      Trust = "signed by a trusted key"
	TrustRegistry Trust = "signed by a key the registry names"
	TrustNone     Trust = "unsigned: signature not checked"
)

// NoVersionError says the registry offers no version to install.
type NoVersionError struct {
	Source      Source
	Constraints Constraints
	Platform    Platform
	Available   []string // newest first
	Reason      string
}

func (e *NoVersionError) Error() string {
	msg := fmt.Sprintf("provider %s: %s", e.Source, e.Reason)
	if len(e.Available) > 0 {
		msg += "; the registry offers " + strings.Join(e.Available, ", ")
	}
	return msg
}

// ChecksumError refuses a download whose SHA-256 differs from what the
// registry published.
type ChecksumError struct {
	Source Source
	File   string
	What   string // "the registry's shasum", "SHA256SUMS"
	Want   string
	Got    string
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("provider %s: %s has SHA-256 %s, but %s says %s: refusing to install it", e.Source, e.File, e.Got, e.What, e.Want)
}

// SignatureError refuses a SHA256SUMS whose signature does not verify.
type SignatureError struct {
	Source Source
	Reason string
}

func (e *SignatureError) Error() string {
	return fmt.Sprintf("provider %s: SHA256SUMS signature: %s: refusing to install it", e.Source, e.Reason)
}

// Install installs the newest version of src that c allows, speaks plugin
// protocol 5 or 6 and is built for the platform: discovery, versions,
// download document, archive (its SHA-256 checked against the document
// and SHA256SUMS), signature, unpack.
func (in *Installer) Install(ctx context.Context, src Source, c Constraints) (*Installed, error) {
	plat := in.Platform
	if plat == (Platform{}) {
		plat = CurrentPlatform()
	}
	if in.Dir == "" {
		return nil, fmt.Errorf("provider %s: no folder to install into (set %s)", src, EnvProviderDir)
	}
	var trusted openpgp.EntityList
	if in.TrustedKeys != "" {
		kr, err := openpgp.ReadArmoredKeyRing(strings.NewReader(in.TrustedKeys))
		if err != nil {
			return nil, fmt.Errorf("trusted key: %w", err)
		}
		trusted = kr
	}
	base, err := in.Registry.ProvidersURL(ctx, src.Host)
	if err != nil {
		return nil, fmt.Errorf("provider %s: %w", src, err)
	}
	versions, err := in.Registry.Versions(ctx, base, src)
	if err != nil {
		return nil, err
	}
	version, err := pick(src, c, plat, versions)
	if err != nil {
		return nil, err
	}
	dl, err := in.Registry.Download(ctx, base, src, version, plat)
	if err != nil {
		return nil, err
	}
	return in.install(ctx, src, version, plat, dl, trusted)
}

// pick chooses the newest version c allows that the platform and protocol
// allow, saying which reason excluded the others.
func pick(src Source, c Constraints, plat Platform, versions []RegistryVersion) (string, error) {
	var all, allowed []string
	byVersion := map[string]RegistryVersion{}
	for _, v := range versions {
		cv, ok := canonicalVersion(v.Version)
		if !ok {
			continue
		}
		all = append(all, cv)
		byVersion[cv] = v
		if c.Allows(cv) {
			allowed = append(allowed, cv)
		}
	}
	sortVersions(all)
	sortVersions(allowed)
	nv := &NoVersionError{Source: src, Constraints: c, Platform: plat, Available: all}
	if len(allowed) == 0 {
		if len(all) == 0 {
			nv.Reason = "the registry offers no version of it"
		} else if c.String() == "" {
			nv.Reason = "the registry offers only pre-releases (name one in the constraint)"
		} else {
			nv.Reason = fmt.Sprintf("no version matches %q", c)
		}
		return "", nv
	}
	var noPlatform, noProtocol []string
	for _, v := range allowed {
		switch rv := byVersion[v]; {
		case !rv.hasPlatform(plat):
			noPlatform = append(noPlatform, v)
		case !rv.speaksProtocol():
			noProtocol = append(noProtocol, v)
		default:
			return v, nil
		}
	}
	var why []string
	if len(noPlatform) > 0 {
		why = append(why, fmt.Sprintf("%s not built for %s", strings.Join(noPlatform, ", "), plat))
	}
	if len(noProtocol) > 0 {
		why = append(why, fmt.Sprintf("%s speak neither plugin protocol 5 nor 6", strings.Join(noProtocol, ", ")))
	}
	nv.Reason = "no version matching " + fmt.Sprintf("%q", c) + " can run here: " + strings.Join(why, "; ")
	return "", nv
}

func (in *Installer) install(ctx context.Context, src Source, version string, plat Platform, dl *Download, trusted openpgp.EntityList) (*Installed, error) {
	wantName := exePrefix + src.Type + "_" + version + "_" + plat.String() + ".zip"
	if dl.Filename == "" {
		dl.Filename = wantName
	}
	if (dl.OS != "" && dl.OS != plat.OS) || (dl.Arch != "" && dl.Arch != plat.Arch) {
		return nil, fmt.Errorf("provider %s: asked for %s, the registry answered with a package for %s_%s", src, plat, dl.OS, dl.Arch)
	}
	if strings.ContainsAny(dl.Filename, "/\\\n") {
		return nil, fmt.Errorf("provider %s: bad file name %q in the download document", src, dl.Filename)
	}
	want := strings.ToLower(dl.SHASum)
	if _, err := hex.DecodeString(want); err != nil || len(want) != 2*sha256.Size {
		return nil, fmt.Errorf("provider %s: the download document's shasum %q is no SHA-256", src, dl.SHASum)
	}

	// SHA256SUMS, and its signature, before the archive: a bad signature
	// costs no download.
	sumsURL, err := dl.resolve(dl.SHASumsURL)
	if err != nil {
		return nil, fmt.Errorf("provider %s: shasums_url: %w", src, err)
	}
	sums, err := in.Registry.getSmall(ctx, sumsURL)
	if err != nil {
		return nil, fmt.Errorf("provider %s: %w", src, err)
	}
	trust, keyID, err := in.checkSignature(ctx, src, dl, sums, trusted)
	if err != nil {
		return nil, err
	}
	listed, err := parseSums(sums)
	if err != nil {
		return nil, fmt.Errorf("provider %s: SHA256SUMS: %w", src, err)
	}
	if got, ok := listed[dl.Filename]; !ok {
		return nil, fmt.Errorf("provider %s: SHA256SUMS does not list %s", src, dl.Filename)
	} else if got != want {
		return nil, &ChecksumError{Source: src, File: dl.Filename, What: "SHA256SUMS", Want: got, Got: want}
	}

	zipPath, sum, err := in.fetchArchive(ctx, src, dl)
	if err != nil {
		return nil, err
	}
	defer os.Remove(zipPath)
	if sum != want {
		return nil, &ChecksumError{Source: src, File: dl.Filename, What: "the registry's shasum", Want: want, Got: sum}
	}
	target := unpackedDir(in.Dir, src, version, plat)
	files, h1, err := unpackTo(ctx, zipPath, target)
	if err != nil {
		return nil, fmt.Errorf("provider %s: unpack %s: %w", src, dl.Filename, err)
	}
	exe := findExe(target, src.Type, version)
	if exe == "" {
		return nil, fmt.Errorf("provider %s: %s %w", src, dl.Filename, errNoExe)
	}
	hashes := []Hash{h1}
	if trust == TrustNone {
		hashes = append(hashes, Hash(SchemeZH+sum))
	} else {
		// As Terraform: a signed SHA256SUMS vouches for every platform's
		// archive of this version, so the lock works on them all.
		prefix := exePrefix + src.Type + "_" + version + "_"
		for name, s := range listed {
			if strings.HasPrefix(name, prefix) && strings.HasSuffix(name, ".zip") {
				hashes = append(hashes, Hash(SchemeZH+s))
			}
		}
	}
	slices.Sort(hashes)
	hashes = slices.Compact(hashes)
	pkg := &Package{Source: src, Version: version, Platform: plat, Dir: target, Files: files, Exe: exe, Location: in.Dir}
	return &Installed{Package: pkg, Hashes: hashes, Trust: trust, KeyID: keyID}, nil
}

// checkSignature checks SHA256SUMS's detached signature: by a trusted key
// when there are any (a missing signature is then refused), else by the
// keys the registry names.
func (in *Installer) checkSignature(ctx context.Context, src Source, dl *Download, sums []byte, trusted openpgp.EntityList) (Trust, string, error) {
	keys, trust := trusted, TrustKey
	if len(trusted) == 0 {
		trust = TrustRegistry
		for _, k := range dl.SigningKeys.GPGPublicKeys {
			kr, err := openpgp.ReadArmoredKeyRing(strings.NewReader(k.ASCIIArmor))
			if err != nil {
				return "", "", &SignatureError{Source: src, Reason: fmt.Sprintf("the registry's key %s does not parse: %v", k.KeyID, err)}
			}
			keys = append(keys, kr...)
		}
		if len(keys) == 0 {
			return TrustNone, "", nil
		}
	}
	if dl.SHASumsSignatureURL == "" {
		return "", "", &SignatureError{Source: src, Reason: "the registry gives no shasums_signature_url"}
	}
	sigURL, err := dl.resolve(dl.SHASumsSignatureURL)
	if err != nil {
		return "", "", fmt.Errorf("provider %s: shasums_signature_url: %w", src, err)
	}
	sig, err := in.Registry.getSmall(ctx, sigURL)
	if err != nil {
		return "", "", fmt.Errorf("provider %s: %w", src, err)
	}
	check := openpgp.CheckDetachedSignature
	if bytes.HasPrefix(bytes.TrimSpace(sig), []byte("-----BEGIN")) {
		check = openpgp.CheckArmoredDetachedSignature
	}
	signer, err := check(keys, bytes.NewReader(sums), bytes.NewReader(sig), nil)
	if err != nil {
		who := "any trusted key"
		if trust == TrustRegistry {
			who = "any key the registry names"
		}
		return "", "", &SignatureError{Source: src, Reason: fmt.Sprintf("not a valid signature by %s: %v", who, err)}
	}
	return trust, fmt.Sprintf("%016X", signer.PrimaryKey.KeyId), nil
}

// fetchArchive downloads the archive into a temporary file in Dir,
// hashing it as it arrives.
func (in *Installer) fetchArchive(ctx context.Context, src Source, dl *Download) (string, string, error) {
	u, err := dl.resolve(dl.DownloadURL)
	if err != nil {
		return "", "", fmt.Errorf("provider %s: download_url: %w", src, err)
	}
	if err := os.MkdirAll(in.Dir, 0o755); err != nil {
		return "", "", err
	}
	f, err := os.CreateTemp(in.Dir, ".download-*.zip")
	if err != nil {
		return "", "", err
	}
	h := sha256.New()
	ctx, cancel := context.WithTimeout(ctx, in.Registry.downloadTimeout())
	defer cancel()
	err = in.Registry.get(ctx, u, func(body io.Reader) error {
		n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(body, maxArchive+1))
		if err == nil && n > maxArchive {
			err = fmt.Errorf("larger than %d bytes", int64(maxArchive))
		}
		return err
	})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", "", fmt.Errorf("provider %s: download: %w", src, err)
	}
	return f.Name(), hex.EncodeToString(h.Sum(nil)), nil
}

// parseSums reads a SHA256SUMS file: lines "HEX  NAME".
func parseSums(b []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		sum, name, ok := strings.Cut(line, " ")
		name = strings.TrimPrefix(strings.TrimSpace(name), "*")
		if _, err := hex.DecodeString(sum); !ok || err != nil || len(sum) != 2*sha256.Size || name == "" {
			return nil, fmt.Errorf("line %d: want \"SHA256  FILE\"", n)
		}
		out[name] = strings.ToLower(sum)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("lists no file")
	}
	return out, nil
}
